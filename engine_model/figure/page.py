"""One self-contained HTML file: a figure's spec and the Vega / Vega-Lite / vega-embed scripts, no network.

The file is polyglot: well-formed XHTML (so an EPUB 3 book can carry it as a content document) that a
browser also reads as HTML (so a blog can link it or embed it in an <iframe>). Scripts sit in CDATA
sections behind `//` comments, which both parsers accept; the only text XML forbids there is "]]>",
which the minified bundle has only as `a[b[c]]>d` comparisons and gets a space.
"""

from __future__ import annotations

import html
import json
import re

TEMPLATE = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en" xml:lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{title}</title>
<style>/*<![CDATA[*/
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1rem; color: #222; }}
main {{ max-width: 820px; }}
h1 {{ font-size: 1.4rem; margin: 0 0 .3rem; }}
p {{ margin: .3rem 0 .6rem; line-height: 1.4; }}
.note {{ color: #555; font-size: .85rem; }}
#figure.vega-embed {{ display: flex; flex-direction: column; }}
#figure .vega-bindings {{ order: -1; margin: .4rem 0 .8rem; }}
.vega-bind {{ margin: .2rem 0; }}
.vega-bind-name {{ display: inline-block; min-width: 13rem; font-weight: 600; }}
.vega-bind label {{ margin-right: .7rem; }}
/*]]>*/</style>
</head>
<body>
<main>
<h1>{title}</h1>
<p>{teaser}</p>
<div id="figure"></div>
<p class="note">{note}</p>
</main>
<script>//<![CDATA[
{bundle}
//]]></script>
<script>//<![CDATA[
(function () {{
  var spec = {spec};
  vegaEmbed("#figure", spec, {{actions: false, renderer: "svg"}}).then(function (result) {{
    window.whoWaitsView = result.view;
  }});
}})();
//]]></script>
</body>
</html>
"""


def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert (imported here, and only here, so the
    engine runs without it until someone asks for a figure)."""
    import vl_convert

    return cdata_safe(vl_convert.javascript_bundle())


def cdata_safe(script: str) -> str:
    """A script that may sit in a CDATA section: "]]>" only as code (`x[y[z]]>w`), where a space is free."""
    safe = re.sub(r"\]\]>(?=[\w$(])", "]] >", script)
    if "]]>" in safe or "</script" in safe.lower():
        raise ValueError("the Vega bundle has ']]>' or '</script' where a space cannot go; "
                         "update page.cdata_safe")
    return safe


def json_for_script(value) -> str:
    """JSON that cannot close a script or a CDATA section: <, > and & (only in strings) as \\u escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def standalone_html(spec: dict, title: str, teaser: str, note: str, bundle: str | None = None) -> str:
    return TEMPLATE.format(title=html.escape(title), teaser=html.escape(teaser), note=html.escape(note),
                           bundle=vega_bundle() if bundle is None else bundle, spec=json_for_script(spec))
