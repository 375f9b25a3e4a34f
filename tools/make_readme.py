"""Render nbs/index.ipynb to README.md without Quarto.

`nbdev_readme` needs the Quarto binary, which cannot be installed everywhere Keel is developed.
This renders the same notebook the same way for GitHub: markdown cells as they are, code cells as
fenced Python, cells marked `#| hide` left out. `nbdev_docs` still renders the site where Quarto exists.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
        elif cell['cell_type'] == 'code' and body: parts.append('```python\n' + body + '\n```')
    return '\n\n'.join(parts) + '\n'

def main():
    nb = json.loads((ROOT/'nbs'/'index.ipynb').read_text(encoding='utf-8'))
    text = '<!-- generated from nbs/index.ipynb by tools/make_readme.py; edit the notebook, not this file -->\n\n' + render(nb)
    out = ROOT/'README.md'
    if not out.exists() or out.read_text(encoding='utf-8') != text: out.write_text(text, encoding='utf-8')

if __name__ == '__main__': main()
