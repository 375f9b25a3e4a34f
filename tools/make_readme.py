"""Render nbs/index.ipynb to README.md without Quarto.

`nbdev_readme` needs the Quarto binary, which cannot be installed everywhere Keel is developed.
This renders the same notebook the same way for GitHub: markdown cells as they are, code cells as
fenced Python followed by their saved text outputs (printed text and plain-text results, as fenced blocks;
`tools/run_notebooks.py nbs/index.ipynb` saves them), cells marked `#| hide` left out, `#| echo: false` showing the
output alone and `#| output: false` the code alone. `nbdev_docs` still renders the site where Quarto exists.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def text_output(cell) -> str:
    "A code cell's saved text: stdout streams and the plain-text form of its results, in order."
    out = []
    for o in cell.get('outputs', []):
        if o.get('output_type') == 'stream' and o.get('name') == 'stdout': t = o.get('text', '')
        elif o.get('output_type') in ('execute_result', 'display_data'): t = o.get('data', {}).get('text/plain', '')
        else: continue
        out.append(''.join(t) if isinstance(t, list) else t)
    return ''.join(out).strip('\n')

def render(nb):
    "Markdown for one notebook dict."
    parts = []
    for cell in nb['cells']:
        src = ''.join(cell['source']).strip()
        if not src: continue
        lines = src.splitlines()
        directives = [l.replace(' ', '') for l in lines if l.startswith('#|')]
        if any(d in ('#|hide', '#|exec_doc:false', '#|include:false') for d in directives): continue
        body = '\n'.join(l for l in lines if not l.startswith('#|')).strip()
        if cell['cell_type'] == 'markdown': parts.append(body)
        elif cell['cell_type'] == 'code':
            if body and '#|echo:false' not in directives: parts.append('```python\n' + body + '\n```')
            out = '' if '#|output:false' in directives else text_output(cell)
            if out: parts.append('```\n' + out + '\n```')
    return '\n\n'.join(parts) + '\n'

def main():
    nb = json.loads((ROOT/'nbs'/'index.ipynb').read_text(encoding='utf-8'))
    text = '<!-- generated from nbs/index.ipynb by tools/make_readme.py; edit the notebook, not this file -->\n\n' + render(nb)
    out = ROOT/'README.md'
    if not out.exists() or out.read_text(encoding='utf-8') != text: out.write_text(text, encoding='utf-8')

if __name__ == '__main__': main()
