"""The documentation site as a reader sees it: built offline by `make docs`, opened in a real browser.

`make test` builds the site (`tools/build_docs.py`, which already fails on warnings, broken internal
links and assets from other hosts) before pytest runs; these tests serve `_docs/` on loopback and
open pages in Debian's Chromium through Playwright, with every request to another host blocked and
recorded. Screenshots go to `reports/docs-*.png` (ignored by git).
"""
import functools, http.server, shutil, sys, threading
from pathlib import Path
from urllib.parse import urlparse
import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT/'_docs'
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
pw = pytest.importorskip('playwright.sync_api', reason='playwright is a dev requirement: run `make install`')



@pytest.fixture(scope='module')
def site():
    "The built site served on a free loopback port."
    if not (SITE/'index.html').exists(): pytest.fail('the docs site is not built: run `make docs` (make test does)')
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a): pass
    handler = functools.partial(Quiet, directory=str(SITE))
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{srv.server_port}'
    srv.shutdown()


@pytest.fixture(scope='module')
def browser():
    if CHROMIUM is None: pytest.skip("Chromium is missing: `make browser` installs Debian's chromium")
    with pw.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=['--no-sandbox'])
        yield b
        b.close()


def visit(browser, url, shot):
    "Open `url`; returns (page, failed requests, requests to other hosts). Other hosts are blocked."
    page = browser.new_page(viewport={'width': 1280, 'height': 900})
    failed, external = [], []
    def route(r):
        if urlparse(r.request.url).hostname not in ('127.0.0.1', 'localhost') and not r.request.url.startswith('data:'):
            external.append(r.request.url); return r.abort()
        return r.continue_()
    page.route('**/*', route)
    page.on('requestfailed', lambda r: failed.append(r.url))
    page.on('response', lambda r: r.status >= 400 and failed.append(f'{r.status} {r.url}'))
    page.goto(url, wait_until='networkidle')
    (ROOT/'reports').mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT/'reports'/f'docs-{shot}.png'), full_page=False)
    return page, failed, external


def test_index_page(site, browser):
    page, failed, external = visit(browser, f'{site}/index.html', 'index')
    assert failed == [] and external == []
    assert page.locator('h1').first.inner_text().strip() == 'Keel'
    nav = page.locator('nav.md-nav--primary').inner_text()
    for section in ('Base', 'Providers', 'Evaluation', 'Context and command line'): assert section in nav
    assert page.locator('table').count() >= 1             # the command table


def test_module_page_shows_api(site, browser):
    page, failed, external = visit(browser, f'{site}/retrieval_retriever.html', 'retrieval')
    assert failed == [] and external == []
    assert page.locator('h1').first.inner_text().strip() == 'Retrieval'
    text = page.locator('article').inner_text()
    assert 'Retriever.retrieve' in text and 'Retriever.hybrid' in text     # show_doc for exported symbols
    assert '#| export' not in text and '#| hide' not in text and 'nbdev_export' not in text
    assert '{target=' not in text                                   # Quarto link attributes are not shown raw


def test_evaluation_notebook_page_shows_results(site, browser):
    "The evaluation notebook is committed with its outputs: its tables and its trend plot render."
    page, failed, external = visit(browser, f'{site}/evals_notebook.html', 'evals-notebook')
    assert failed == [] and external == []
    assert 'Evaluating Keel in a notebook' in page.locator('h1').first.inner_text()
    assert page.locator('article table').count() >= 1                      # the scorecard and the tables
    page.wait_for_selector('.js-plotly-plot .main-svg', timeout=15000)     # a plot drawn by the local plotly.js


def test_search_works_offline(site, browser):
    page, failed, external = visit(browser, f'{site}/index.html', 'search')
    page.locator('input.md-search__input').click()
    page.keyboard.type('ledger', delay=30)
    page.wait_for_selector('.md-search-result__item', timeout=15000)
    assert page.locator('.md-search-result__item').count() >= 1
    assert failed == [] and external == []


def test_link_check_finds_what_breaks_an_offline_site(tmp_path):
    "The build's own check: broken pages, missing anchors and assets from other hosts are all reported."
    sys.path.insert(0, str(ROOT/'tools'))
    from build_docs import check_links
    (tmp_path/'a.html').write_text('<h2 id="x">X</h2><a href="b.html#y">b</a><a href="a.html#x">ok</a>'
                                   '<a href="missing.html">m</a><a href="https://example.org/">an external link is fine</a>')
    (tmp_path/'b.html').write_text('<script src="https://cdn.example.org/lib.js"></script>'
                                   '<script>var s = "https://unpkg.com/x/embed.js";</script><link href="/a.html">')
    n, problems = check_links(tmp_path)
    assert n == 2
    assert sorted(problems) == sorted(['a.html: missing anchor b.html#y', 'a.html: broken link missing.html',
                                       'b.html: external asset https://cdn.example.org/lib.js',
                                       'b.html: external asset https://unpkg.com/x/embed.js'])


def test_links_to_nbdevs_site_point_at_this_sites_pages():
    sys.path.insert(0, str(ROOT/'tools'))
    from build_docs import local_links
    host = 'https://example.org/keel'
    docs = {'retrieval': {'retriever', 'retriever.retrieve'}, 'evals_core': {'sourceref'}}
    text = (f'[a]({host}/retrieval.html#retriever.retrieve) [b]({host}/evals_core.html#sourceref.matches) '
            f'[c]({host}/airgap.html#_spy) [d]({host}/db.html)')
    assert local_links(text, host, docs) == ('[a](retrieval.html#retrieverretrieve) [b](evals_core.html#sourceref) '
                                             '[c](airgap.html) [d](db.html)')
