"""Wrap the code lines of notebooks that are longer than 120 characters, and leave every other line alone.

The house style is compact (fastcore's), so the notebooks are not run through black as a whole. Each line over the
limit gets the first of these that works: a whole-line comment wrapped onto comment lines; the body of a one-line
`if x: body` moved to its own line; a break inside brackets at the last comma (or `for`, `if`, `and`, `or`, `+`) that
fits, outermost brackets first, aligned after the bracket (one level in when the bracket is far right), the rest of
the same brackets refilled like a paragraph; an end-of-line comment moved above; a long string cut into adjacent
literals (a pattern between `|` alternatives, text between words); a line inside a triple-quoted string continued
with backslash-newline (the text is the same); the value of `x = ...`, `return ...` or `assert cond` put in
parentheses so it can break; and last, black (`--line-length 120`, quotes kept) on that one statement. IPython magics
and `!` lines are masked while a cell is read and put back after. A cell whose syntax tree would change is left as it
was. Running it again changes nothing. What it cannot fix (a long docstring, a docments comment, an f-string field
longer than the limit) is listed for a person to shorten, with the `>` summaries nbdev turns into module docstrings.

    python tools/wrap_lines.py                 # every notebook under nbs/
    python tools/wrap_lines.py nbs/55_*.ipynb  # some notebooks
    python tools/wrap_lines.py --check         # list the long lines, change nothing; exit 1 when there are any
    python tools/wrap_lines.py --exported      # list the lines over the limit in the exported modules (keel/)
"""
import argparse, ast, io, json, re, sys, textwrap, tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 120
MAGIC = re.compile(r'^(\s*)([%!]|\w+\s*=\s*!|.*\?\s*$)')  # `%magic`, `!cmd`, `x = !cmd`, `obj?`

def long_lines(text, limit=LIMIT):
    "1-based numbers of the lines of `text` longer than `limit` characters."
    return [i for i, l in enumerate(text.split('\n'), 1) if len(l) > limit]

def mask(src):
    "Replace magic and shell lines by placeholder calls black can parse; return the masked text and the originals."
    lines, saved = src.split('\n'), {}
    for i, l in enumerate(lines):
        m = MAGIC.match(l)
        if m and not l.lstrip().startswith('#'):
            saved[f'__keel_magic_{i}__()'] = l
            lines[i] = f'{m.group(1)}__keel_magic_{i}__()'
    return '\n'.join(lines), saved

def unmask(src, saved):
    "Put the magic and shell lines back."
    for k, v in saved.items(): src = re.sub(rf'^\s*{re.escape(k)}$', lambda _: v, src, flags=re.M)
    return src

def tokens(src):
    "The tokens of `src`, or None when it does not tokenize."
    try: return list(tokenize.generate_tokens(io.StringIO(src + '\n').readline))
    except (tokenize.TokenError, IndentationError, SyntaxError): return None

def break_points(src, n):
    "Where line `n` (1-based) of `src` may break inside brackets: `(depth, rank, column, continuation column)`."
    lines = src.split('\n')
    indent = len(lines[n - 1]) - len(lines[n - 1].lstrip())
    stack, out, skip, comp, last = [], [], set(), set(), None   # skip: depths in a `for` target or `lambda` parameters
    for t in tokens(src) or []:
        if t.start[0] > n: break
        if t.type in (tokenize.NL, tokenize.COMMENT, tokenize.NEWLINE): continue
        if last is not None and stack and last is stack[-1] and t.start[0] > last[2]: last[1] = indent   # hanging
        last = None
        d = len(stack)
        col = stack[-1][1] if stack else 0
        if (t.type == tokenize.NAME and d and d not in skip and t.start[0] == n
                and t.string in ('for', 'if', 'and', 'or')):
            rank = 1 if t.string == 'if' and d not in comp else 0   # a conditional expression breaks last
            out.append((d, rank, t.start[1], col))
        if t.type == tokenize.NAME and d:
            if t.string in ('for', 'lambda'): skip.add(d)
            if t.string == 'for': comp.add(d)
            elif t.string == 'in': skip.discard(d)
        if t.type != tokenize.OP: continue
        if t.string == ':': skip.discard(d)   # the end of lambda parameters
        if t.string == '+' and d and t.start[0] == n: out.append((d, 0, t.start[1], col))
        if t.string in '([{': stack.append([t.start[1], t.end[1], t.start[0]]); last = stack[-1]
        elif t.string in ')]}' and stack: skip.discard(d); comp.discard(d); stack.pop()
        elif t.string == ',' and d and d not in skip and t.start[0] == n: out.append((d, 0, t.end[1], col))
    return out

def depth_after(src, n):
    "How many brackets are open at the end of line `n` of `src`."
    d = 0
    for t in tokens(src) or []:
        if t.start[0] > n: break
        if t.type == tokenize.OP and t.string in '([{': d += 1
        elif t.type == tokenize.OP and t.string in ')]}': d -= 1
    return d

def fill_line(src, n, limit=LIMIT):
    "Break line `n` of `src` once, inside its outermost brackets where the head fits, aligned after the bracket."
    lines = src.split('\n')
    line = lines[n - 1]
    fits = [(d, r, -c, k) for d, r, c, k in break_points(src, n) if len(line[:c].rstrip()) <= limit and k < c
            and line[c:].strip() and not line[c:].lstrip().startswith('#')]
    if not fits: return None
    key = (lambda f: (f[0], f[3], f[1], f[2])) if re.match(r'\s*(async\s+)?(def|class)\b', line) else None
    d, _, c, k = min(fits, key=key)   # a signature breaks between its parameters, not inside an annotation
    opener = line[:k].rstrip()
    if k > limit // 2 and opener.endswith(('(', '[', '{')) and opener.strip() not in '([{':
        ind = len(line) - len(line.lstrip())   # the bracket is far right: break after it, one level in (hanging)
        lines[n - 1:n] = [opener, ' ' * (ind + 4) + line[k:].lstrip()]
        return '\n'.join(lines)
    tail = ' ' * k + line[-c:].lstrip()
    lines[n - 1:n] = [line[:-c].rstrip(), tail]
    nxt = lines[n + 1] if n + 1 < len(lines) else None
    # reflow, as a paragraph is filled: the next line goes on in the same brackets, so it joins the tail
    if (nxt is not None and tail.endswith(',') and nxt.strip() and not nxt.lstrip().startswith('#')
            and depth_after('\n'.join(lines), n + 1) >= d):
        lines[n:n + 2] = [tail + ' ' + nxt.strip()]
    return '\n'.join(lines)

def paren_expr(src, n, limit=LIMIT):
    "Put the value of a one-line `x = ...`, `return ...` or `assert ...` in parentheses, so that it can break inside."
    lines = src.split('\n')
    line = lines[n - 1]
    if statement_of(src, n) != (n, n): return None
    toks = [t for t in tokens(src) or [] if t.start[0] == n and t.type not in (tokenize.NL, tokenize.NEWLINE)]
    depth, start, end = 0, None, len(line.rstrip())
    for i, t in enumerate(toks):
        if t.type == tokenize.COMMENT: end = len(line[:t.start[1]].rstrip()); break
        if t.type == tokenize.OP and t.string in '([{': depth += 1
        elif t.type == tokenize.OP and t.string in ')]}': depth -= 1
        elif depth == 0 and start is None and (t.string in ('=', '+=', '-=') and t.type == tokenize.OP
                                               or i == 0 and t.string in ('return', 'assert')):
            start = t.end[1]
        elif depth == 0 and start is not None and toks[0].string == 'assert' and t.string == ',':
            end = t.start[1]; break   # `assert cond, message`: only the condition
    if start is None or line[start:end].strip().startswith('(') and line[start:end].strip().endswith(')'): return None
    new = line[:start] + ' (' + line[start:end].strip() + ')' + line[end:]
    try: compile(textwrap.dedent(new).strip(), '<line>', 'exec', ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError: return None
    lines[n - 1] = new
    return '\n'.join(lines)

COMPOUND = re.compile(r'^(\s*)(if|elif|else|for|while|try|except|finally|with|def|class|async)\b')

def split_compound(src, n, limit=LIMIT):
    "Put the body of a one-line compound statement (`if x: body`) on a line of its own."
    lines = src.split('\n')
    line = lines[n - 1]
    m = COMPOUND.match(line)
    if not m: return None
    depth = 0
    for t in tokens(src) or []:
        if t.start[0] < n: continue
        if t.start[0] > n or t.type == tokenize.COMMENT: return None
        if t.type == tokenize.OP and t.string in '([{': depth += 1
        elif t.type == tokenize.OP and t.string in ')]}': depth -= 1
        elif t.type == tokenize.NAME and t.string == 'lambda' and depth == 0: return None
        elif t.type == tokenize.OP and t.string == ':' and depth == 0:
            body = line[t.end[1]:].strip()
            if not body or body.startswith('#'): return None
            lines[n - 1:n] = [line[:t.end[1]], m.group(1) + '    ' + body]
            return '\n'.join(lines)
    return None

def comment_above(src, n, limit=LIMIT):
    "Move the end-of-line comment of line `n` onto a line of its own above it, when that makes the code fit."
    lines, toks = src.split('\n'), tokens(src)
    line = lines[n - 1]
    depth = 0
    for t in toks or []:
        if t.start[0] > n: break
        if t.type == tokenize.OP and t.string in '([{': depth += 1
        elif t.type == tokenize.OP and t.string in ')]}': depth -= 1
        elif t.type == tokenize.COMMENT and t.start[0] == n and depth == 0 and line[:t.start[1]].strip():
            code = line[:t.start[1]].rstrip()
            if len(code) > limit: return None
            ind = re.match(r'\s*', line).group(0)
            lines[n - 1:n] = [ind + t.string, code]
            return '\n'.join(lines)
    return None

def statement_of(src, n):
    "First and last line (1-based) of the statement that holds line `n`, or None."
    toks, first = tokens(src), None
    for t in toks or []:
        if first is None and t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            first = t.start[0]
        if t.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if first is not None and first <= n <= t.start[0]: return first, t.start[0]
            first = None
    return None

def black_statement(src, n, limit=LIMIT):
    "Reformat, with black alone, the one statement that holds line `n`; None unless all its lines then fit."
    try: import black; from black.mode import Preview
    except ImportError: return None   # black is a development requirement; without it the line is listed instead
    span = statement_of(src, n)
    if span is None: return None
    lines = src.split('\n')
    stmt = lines[span[0] - 1:span[1]]
    ind = re.match(r'\s*', stmt[0]).group(0)
    if any(l.strip() and not l.startswith(ind) for l in stmt): return None
    mode = black.Mode(line_length=limit - len(ind), string_normalization=False, preview=True,
                      enabled_features={Preview.string_processing})
    try: out = black.format_str(textwrap.dedent('\n'.join(stmt)) + '\n', mode=mode).rstrip('\n').split('\n')
    except Exception: return None
    out = [ind + l if l else l for l in out]
    if any(len(l) > limit for l in out): return None
    lines[span[0] - 1:span[1]] = out
    return '\n'.join(lines)

STRING = re.compile(r'^([rRbBuUfF]{0,2})(["\'])(.*)\2$', re.S)

def safe_cut(body, i, fstring):
    "Whether a string literal's body may be cut before index `i` (not in an escape, an f-string field or `{{`)."
    if i <= 0 or i >= len(body) or (len(body[:i]) - len(body[:i].rstrip('\\'))) % 2: return False
    if not fstring: return True
    depth, j = 0, 0
    while j < i:
        if depth == 0 and body[j:j + 2] in ('{{', '}}'): j += 2; continue
        depth += {'{': 1, '}': -1}.get(body[j], 0); j += 1
    return depth == 0 and j == i

def split_string(src, n, limit=LIMIT):
    "Cut the long one-line string literal on line `n` into two adjacent literals, when it stands inside brackets."
    lines, stack, toks = src.split('\n'), [], tokens(src) or []
    line = lines[n - 1]
    for t in toks:
        if t.start[0] > n: break
        if t.type == tokenize.OP and t.string in '([{': stack.append(t.end)
        elif t.type == tokenize.OP and t.string in ')]}' and stack: stack.pop()
        elif t.type == tokenize.STRING and t.start[0] == t.end[0] == n and stack and t.end[1] > limit:
            m = STRING.match(t.string)
            if not m or t.start[1] >= limit - 20: continue
            pre, q, body = m.groups()
            start = t.start[1] + len(pre) + 1   # column of the body's first character
            top = min(len(body) - 1, limit - 1 - start)   # head + closing quote within the limit
            like = '|' if 'r' in pre.lower() else ' '   # a pattern breaks between alternatives, text between words
            cuts = [i for i in range(top, 0, -1) if body[i - 1] in ' |,;>' and safe_cut(body, i, 'f' in pre.lower())]
            best = [i for i in cuts if body[i - 1] == like and i > top - 40]
            for i in (best or cuts)[:1]:
                head, rest, more = line[:start] + body[:i] + q, body[i:], line[t.end[1]:]
                nxt = next((u for u in toks if u.start[0] == n + 1 and u.type != tokenize.NL), None)
                m2 = STRING.match(nxt.string) if nxt is not None and nxt.type == tokenize.STRING else None
                if (not more.strip() and m2 and not body.endswith('\\n') and nxt.start == (n + 1, t.start[1])
                        and nxt.end[0] == n + 1
                        and m2.group(1).lower() == pre.lower() and m2.group(2) == q):   # reflow into the next piece
                    rest, more = rest + m2.group(3), lines[n][nxt.end[1]:]
                    lines[n - 1:n + 1] = [head, ' ' * t.start[1] + pre + q + rest + q + more]
                else: lines[n - 1:n] = [head, ' ' * t.start[1] + pre + q + rest + q + more]
                return '\n'.join(lines)
    return None

def continue_text(src, n, limit=LIMIT):
    "Continue a long line inside a triple-quoted, non-raw string with a backslash-newline (the text is unchanged)."
    lines = src.split('\n')
    line = lines[n - 1]
    for t in tokens(src) or []:
        pre = re.match(r'[a-zA-Z]*', t.string).group(0).lower() if t.type == tokenize.STRING else ''
        if t.type != tokenize.STRING or not t.start[0] <= n <= t.end[0] or t.start[0] == t.end[0]: continue
        if 'r' in pre or 'f' in pre: return None
        lo = t.start[1] + len(pre) + 3 if n == t.start[0] else 0   # inside the quotes only
        hi = min(limit - 1, t.end[1] - 3 if n == t.end[0] else len(line))
        cut = line.rfind(' ', lo, hi)   # between words, else after CSS-like punctuation
        if cut < lo: cut = max(line.rfind(c, lo, hi - 1) for c in ';},')
        if cut < lo or (len(line[:cut + 1]) - len(line[:cut + 1].rstrip('\\'))) % 2: return None
        lines[n - 1:n] = [line[:cut + 1] + '\\', line[cut + 1:]]
        return '\n'.join(lines)
    return None

def fill(src, limit=LIMIT):
    "Wrap every long line of `src` as far as the comma/keyword breaks, moved comments and black can."
    done = set()
    for _ in range(10_000):   # every step shortens a line or moves text down; the bound is a safety net
        for n in long_lines(src, limit):
            if (n, src.split('\n')[n - 1]) in done: continue
            new = (wrap_comment(src, n, limit) or split_compound(src, n, limit) or fill_line(src, n, limit)
                   or comment_above(src, n, limit) or split_string(src, n, limit) or continue_text(src, n, limit)
                   or paren_expr(src, n, limit) or black_statement(src, n, limit))
            if new is not None: src = new; break
            done.add((n, src.split('\n')[n - 1]))
        else: return src
    return src

def wrap_comment(src, n, limit=LIMIT):
    "Wrap line `n` when it is a comment alone on its line (not a `#|` directive) onto comment lines of its own."
    lines = src.split('\n')
    line = lines[n - 1]
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    on_line = [t for t in tokens(src) or [] if t.start[0] <= n <= t.end[0] and t.type not in skip]
    if len(on_line) != 1 or on_line[0].type != tokenize.COMMENT or line.lstrip().startswith('#|'): return None
    ind, text = re.match(r'^(\s*)#\s?(.*)$', line).groups()
    out = textwrap.wrap(text, width=limit - len(ind) - 2, break_long_words=False, break_on_hyphens=False)
    if len(out) < 2 or any(len(ind) + 2 + len(o) > limit for o in out): return None
    lines[n - 1:n] = [f'{ind}# {o}' for o in out]
    return '\n'.join(lines)

def same_code(a, b):
    "Whether `a` and `b` are the same program (the same syntax tree; tokens when they do not parse)."
    def tree(s):
        try: return ast.dump(compile(s, '<cell>', 'exec', ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT))
        except SyntaxError: return None
    ta, tb = tree(a), tree(b)
    if ta is not None: return ta == tb
    toks = lambda s: [(t.type, t.string) for t in tokens(s) or [] if t.type not in (tokenize.NL, tokenize.COMMENT)]
    return tokens(a) is not None and toks(a) == toks(b)

def wrap_cell(src):
    "`src` with its long lines wrapped, and the 1-based numbers of the lines still too long."
    if not long_lines(src) or src.lstrip().startswith('%%'): return src, long_lines(src)
    masked, saved = mask(src)
    new = fill(masked)
    if not same_code(masked, new):   # never change what the cell does
        print('wrapping would change the code of a cell; left as it was:', src.split('\n')[0][:80], file=sys.stderr)
        return src, long_lines(src)
    res = unmask(new, saved)
    return res, long_lines(res)

def code_cells(nb):
    "The notebook's code cells with their source as one string."
    for c in nb['cells']:
        if c['cell_type'] == 'code': yield c, ''.join(c['source'])

def long_summary(nb, limit=LIMIT):
    "The notebook's `> summary` when nbdev would make it a module docstring over the limit, else None."
    exports = any(c['cell_type'] == 'code' and '#| default_exp' in ''.join(c['source']) for c in nb['cells'])
    md = [c for c in nb['cells'] if c['cell_type'] == 'markdown']
    title = next((c for c in md if ''.join(c['source']).startswith('# ')), None)
    summ = next((l for l in ''.join(title['source']).splitlines() if l.startswith('> ')), None) if title else None
    return summ if exports and summ and len(summ.lstrip('> ').strip()) + 6 > limit else None

def wrap_notebook(path, write=True):
    "Wrap `path`'s long code lines (written back when `write`); return `(cell number, line number, line)` left over."
    nb, left, changed = json.loads(Path(path).read_text()), [], False
    for n, (c, src) in enumerate(code_cells(nb)):
        new, rest = wrap_cell(src) if write else (src, long_lines(src))
        if new != src:
            c['source'], changed = new.splitlines(keepends=True), True
        left += [(n, i, new.split('\n')[i - 1]) for i in rest]
    if long_summary(nb): left.append(('summary', 1, long_summary(nb)))   # shorten it by hand
    if changed and write:
        Path(path).write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n')
    return left

def exported_long_lines(root=ROOT):
    "`(file, line number)` of every line over the limit in `keel/`, but for what nbdev writes itself."
    files = sorted(f for f in (root/'keel').rglob('*.py') if f.name != '_modidx.py')   # the generated index
    def generated(l): return l.startswith('__all__ = [')   # nbdev wraps `__all__` at 120 after its 10-character head
    return [(f.relative_to(root), i) for f in files for i, l in enumerate(f.read_text().split('\n'), 1)
            if len(l) > LIMIT and not generated(l)]

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('paths', nargs='*', help='notebooks (default: every notebook under nbs/)')
    p.add_argument('--check', action='store_true', help='list the long lines and change nothing')
    p.add_argument('--exported', action='store_true', help='list the long lines of keel/ instead')
    a = p.parse_args(argv)
    if a.exported:
        left = exported_long_lines()
        for f, i in left: print(f'{f}:{i}')
        print(f'{len(left)} exported lines over {LIMIT} characters')
        return int(bool(left))
    paths = [Path(x) for x in a.paths] or sorted((ROOT/'nbs').rglob('*.ipynb'))
    total = 0
    for path in paths:
        if '.ipynb_checkpoints' in path.parts: continue
        left = wrap_notebook(path, write=not a.check)
        name = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        for n, i, l in left:
            where = 'the `>` summary (a module docstring)' if n == 'summary' else f'cell {n} line {i}'
            print(f'{name}: {where} ({len(l)} chars): {l.strip()[:80]}')
        total += len(left)
    print(f'{total} code lines over {LIMIT} characters {"found" if a.check else "left to split by hand"}')
    return int(bool(total)) if a.check else 0

if __name__ == '__main__': sys.exit(main())
