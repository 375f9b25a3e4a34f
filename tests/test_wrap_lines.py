"""`tools/wrap_lines.py` wraps only the code lines over 120 characters, keeps what each cell does, and changes nothing
when run again.

Each case is a notebook cell as a string; the tool's own checks (the syntax tree before and after) are not trusted
alone: the wrapped cell is compiled and compared here too.
"""
import ast, importlib.util, json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location('wrap_lines', ROOT/'tools'/'wrap_lines.py')
wl = importlib.util.module_from_spec(spec); spec.loader.exec_module(wl)

def tree(src): return ast.dump(ast.parse(src))

def check(src):
    "Wrap `src`; assert every line fits, the untouched lines are kept and the code is the same; return the result."
    out, left = wl.wrap_cell(src)
    assert left == [] and all(len(l) <= 120 for l in out.split('\n')), out
    assert wl.wrap_cell(out) == (out, [])                       # running it again changes nothing
    short = [l for l in src.split('\n') if len(l) <= 120]
    assert all(l in out.split('\n') for l in short)             # lines within the limit stay as they were
    return out

def test_call_broken_at_commas_aligned_after_its_bracket():
    src = ("def f(x): return x\n"
           "y = some_function(argument_one, argument_two, argument_three, argument_four, argument_five, argument_six, "
           "argument_seven, kw='eight')\n"
           "if y: print(y)")
    out = check(src)
    assert tree(out) == tree(src)
    assert out.split('\n')[2].startswith(' ' * len('y = some_function('))   # visual indent, fastcore style
    assert 'def f(x): return x' in out and 'if y: print(y)' in out          # compact lines are not reformatted

def test_long_strings_are_split_into_adjacent_literals():
    pat = "|".join(f"word{i}" for i in range(40))
    src = f'P = re.compile(r"\\b(?:{pat})\\b", re.I)\nmsg = f"{{x}} " + str(["a long text " * 12])'
    out = check(src)
    assert tree(out) == tree(src)
    assert 'r"' in out.split('\n')[1]                           # the raw prefix goes with each piece

def test_magics_and_shell_lines_survive():
    src = ("%time x = 1\n"
           "!ls -la\n"
           "result = compute(first_argument_name, second_argument_name, third_argument_name, fourth_argument_name, 5)")
    out = check(src)
    assert out.startswith("%time x = 1\n!ls -la\n")

def test_comments_and_text_in_triple_quoted_strings():
    words = " ".join(["lorem"] * 30)
    src = f'# {words}\nTEXT = """first line\n{words}\nlast"""'
    out = check(src)
    assert tree(out) == tree(src)                               # the string's text is unchanged (backslash-newline)
    assert out.split('\n')[1].startswith('# ')

def test_notebook_round_trip(tmp_path):
    nb = dict(cells=[dict(cell_type='code', id='a', metadata={}, outputs=[], execution_count=None,
                          source=["x = f(" + ", ".join(f"argument_{i}" for i in range(20)) + ")"]),
                     dict(cell_type='markdown', id='b', metadata={}, source=["# " + "t" * 200])],
              metadata={}, nbformat=4, nbformat_minor=5)
    p = tmp_path/'n.ipynb'; p.write_text(json.dumps(nb))
    assert wl.wrap_notebook(p) == []
    cells = json.loads(p.read_text())['cells']
    assert all(len(l.rstrip('\n')) <= 120 for l in cells[0]['source']) and len(cells[0]['source']) >= 2
    assert cells[1]['source'] == ["# " + "t" * 200]             # markdown is not touched

def test_exported_long_lines(tmp_path):
    (tmp_path/'keel'/'sub').mkdir(parents=True)
    (tmp_path/'keel'/'a.py').write_text("__all__ = ['" + "x', '" * 30 + "']\nok = 1\ny = '" + "z" * 130 + "'\n")
    (tmp_path/'keel'/'_modidx.py').write_text("d = '" + "z" * 200 + "'\n")         # the generated index is not checked
    (tmp_path/'keel'/'sub'/'b.py').write_text("short = 2\n")
    assert wl.exported_long_lines(tmp_path) == [(Path('keel/a.py'), 3)]         # nbdev's `__all__` head line is exempt
