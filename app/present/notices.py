"""Who Waits' licence and the notices of everything third-party its outputs carry: the one source of that
text.

Every standalone page (app.present.page) ends with a "Credits and licences" fold, its script bundle starts
with a comment naming what it holds, every EPUB (app.present.epub) has a page of them, and the repository's
NOTICE file is `notice_text()` (`python -m app.present.notices > NOTICE`; tests/test_notices.py checks it is
current).

What is carried, and why each licence asks for it:
- the script bundle (Vega, Vega-Lite, vega-embed and the npm packages they run on, as vl-convert bundles
  them; the page inlines it): BSD-3-Clause, ISC and MIT ask for the copyright line and the licence text in
  every copy, so the fold holds both;
- the font vl-convert draws with (Liberation Sans, whose subsets a PDF export embeds): SIL OFL 1.1;
- the data a figure's runs read (the real-traffic story reads the bundled head of Mooncake's trace) and the
  data sets the repository holds (app/samples, tests/data), each with its licence file beside it.
tests/test_notices.py discovers what is bundled (the bundle's own versions, the fonts a PDF embeds, every
licence file beside bundled data, every file a story reads) and fails when one has no notice here.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

PROJECT = "Who Waits"
LICENCE = "Apache-2.0"  # the project's own (LICENSE, pyproject.toml)
OWN = (f"{PROJECT} is licensed under the Apache License, Version 2.0 "
       "(http://www.apache.org/licenses/LICENSE-2.0). Its charts are drawn with the components below, "
       "inlined in this file under their own licences.")
IDL = "Copyright (c) 2015-2023, University of Washington Interactive Data Lab"
BOSTOCK = "Copyright 2010-2026 Mike Bostock"


@dataclass(frozen=True)
class Notice:
    name: str
    version: str
    holder: str  # the copyright line(s) as the component's own licence file writes them
    licence: str  # SPDX id
    url: str
    part: str  # "script" (inlined in every page), "font", "data"
    files: tuple[str, ...] = ()  # data: the bundled files and licence files it covers (names)
    about: str = ""  # data: what it is, where it is cut from, how to cite it


def _script(name: str, version: str, holder: str, licence: str, url: str) -> Notice:
    return Notice(name, version, holder, licence, url, "script")


# The script bundle: vl-convert 1.9.0's `javascript_bundle()` (Vega 6.2.0, Vega-Lite 6.4.1, vega-embed 7.0.2:
# the versions vl_convert reports), and the npm packages those three run on in a browser. Dependency versions
# are those npm resolves for the three today; the bundle may hold earlier patch releases of the same packages.
VEGA_MODULES = ("vega-canvas", "vega-crossfilter", "vega-dataflow", "vega-encode", "vega-event-selector",
                "vega-expression", "vega-force", "vega-format", "vega-functions", "vega-geo",
                "vega-hierarchy", "vega-label", "vega-loader", "vega-parser", "vega-projection",
                "vega-regression", "vega-runtime", "vega-scale", "vega-scenegraph", "vega-selections",
                "vega-statistics",
                "vega-time", "vega-transforms", "vega-util", "vega-view", "vega-view-transforms",
                "vega-voronoi", "vega-wordcloud")
D3 = (("d3-array", "3.2.x"), ("d3-color", "3.1.x"), ("d3-dispatch", "3.0.x"), ("d3-dsv", "3.0.x"),
      ("d3-force", "3.0.x"), ("d3-format", "3.1.x"), ("d3-hierarchy", "3.1.x"), ("d3-interpolate", "3.0.x"),
      ("d3-path", "3.1.x"),
      ("d3-quadtree", "3.0.x"), ("d3-scale", "4.0.x"), ("d3-shape", "3.2.x"), ("d3-time", "3.1.x"),
      ("d3-time-format", "4.1.x"), ("d3-timer", "3.0.x"))
SCRIPTS = (
    _script("Vega", "6.2.0", IDL, "BSD-3-Clause", "https://github.com/vega/vega"),
    _script(f"Vega's modules ({', '.join(VEGA_MODULES)})", "as in Vega 6.2.0", IDL, "BSD-3-Clause",
            "https://github.com/vega/vega/tree/main/packages"),
    _script("vega-interpreter (the expression interpreter that draws under a Content-Security-Policy)", "2.x",
            IDL, "BSD-3-Clause", "https://github.com/vega/vega/tree/main/packages/vega-interpreter"),
    _script("Vega-Lite", "6.4.1", "Copyright (c) 2015, University of Washington Interactive Data Lab.",
            "BSD-3-Clause", "https://github.com/vega/vega-lite"),
    _script("vega-embed", "7.0.2", "Copyright (c) 2015, University of Washington Interactive Data Lab",
            "BSD-3-Clause", "https://github.com/vega/vega-embed"),
    _script("vega-themes", "3.0.0", "Copyright (c) 2016, University of Washington Interactive Data Lab",
            "BSD-3-Clause", "https://github.com/vega/vega-themes"),
    _script("vega-tooltip", "1.0.0", "Copyright 2016 Interactive Data Lab and contributors", "BSD-3-Clause",
            "https://github.com/vega/vega-tooltip"),
    _script("vega-schema-url-parser", "3.0.x", "Copyright (c) 2017, Vega", "BSD-3-Clause",
            "https://github.com/vega/schema-url-parser"),
    *(_script(name, version, BOSTOCK, "ISC", f"https://github.com/d3/{name}") for name, version in D3),
    _script("d3-delaunay", "6.0.x", "Copyright 2018-2026 Observable, Inc.; Copyright 2021 Mapbox", "ISC",
            "https://github.com/d3/d3-delaunay"),
    _script("d3-geo", "3.1.x", f"{BOSTOCK}; Copyright 2008-2012 Charles Karney", "ISC",
            "https://github.com/d3/d3-geo"),
    _script("d3-geo-projection", "4.0.x", "Copyright 2013-2026 Mike Bostock; Copyright 2015 Ricky Reusser",
            "ISC", "https://github.com/d3/d3-geo-projection"),
    _script("d3-scale-chromatic", "3.1.x", f"{BOSTOCK}; Copyright 2002 Cynthia Brewer, Mark Harrower, "
            "and The Pennsylvania State University", "ISC", "https://github.com/d3/d3-scale-chromatic"),
    _script("internmap", "2.0.x", "Copyright 2021 Mike Bostock", "ISC", "https://github.com/mbostock/internmap"),
    _script("delaunator", "5.0.x", "Copyright (c) 2026, Mapbox", "ISC", "https://github.com/mapbox/delaunator"),
    _script("robust-predicates", "3.0.x", "Vladimir Agafonkin, public domain", "Unlicense",
            "https://github.com/mourner/robust-predicates"),
    _script("topojson-client", "3.1.x", "Copyright 2012-2019 Michael Bostock", "ISC",
            "https://github.com/topojson/topojson-client"),
    _script("semver", "7.x", "Copyright (c) Isaac Z. Schlueter and Contributors", "ISC",
            "https://github.com/npm/node-semver"),
    _script("fast-json-patch", "3.1.x", "Copyright (c) 2013, 2014, 2020 Joachim Wester", "MIT",
            "https://github.com/Starcounter-Jack/JSON-Patch"),
    _script("json-stringify-pretty-compact", "4.0.x",
            "Copyright (c) 2014, 2016, 2017, 2019, 2021, 2022 Simon Lydell", "MIT",
            "https://github.com/lydell/json-stringify-pretty-compact"),
    _script("tslib", "2.x", "Copyright (c) Microsoft Corporation.", "0BSD", "https://github.com/microsoft/tslib"),
)
FONTS = (
    Notice("Liberation Sans (vl-convert's sans-serif; a PDF export embeds subsets of it)", "2.00.1",
           "Digitized data copyright (c) 2010 Google Corporation with Reserved Font Arimo, Tinos and "
           "Cousine. Copyright (c) 2012 Red Hat, Inc. with Reserved Font Name Liberation.", "OFL-1.1",
           "https://github.com/liberationfonts/liberation-fonts", "font", ("LiberationSans",)),
)
SGLANG = "LICENSE.SGLang-Apache-2.0.txt"
DATA = (
    Notice("Mooncake FAST'25 request traces (kvcache-ai/Mooncake)",
           "3cca71daccf2a7afb8fe3f0295358f70e3a69fdb",
           "Mooncake authors (kvcache-ai)", "Apache-2.0", "https://github.com/kvcache-ai/Mooncake", "data",
           ("mooncake_conversation_trace_head300.jsonl", "conversation_trace_head1000.jsonl",
            "synthetic_trace_head1000.jsonl", "LICENSE.Mooncake-Apache-2.0.txt"),
           "The first lines of FAST25-release/traces/conversation_trace.jsonl and synthetic_trace.jsonl, "
           "lines unchanged. The real-traffic story's arrivals and lengths are read from the first 300."),
    Notice("Azure LLM inference trace 2023 (Azure/AzurePublicDataset)",
           "790921015d50dd6aae7f7e47f39ba0e235ad6b08", "Microsoft Azure", "CC-BY-4.0",
           "https://github.com/Azure/AzurePublicDataset", "data",
           ("AzureLLMInferenceTrace_conv_head1500.csv", "AzureLLMInferenceTrace_code_head1000.csv",
            "AzureLLMInferenceTrace_conv_head1000.csv", "LICENSE.AzurePublicDataset-CC-BY-4.0.txt"),
           "The first 1,000 or 1,500 rows of data/AzureLLMInferenceTrace_{conv,code}.csv, rows unchanged "
           "(a head: the only change). Cite: Patel et al., \"Splitwise: Efficient generative LLM inference "
           "using phase splitting\", ISCA 2024."),
    Notice("SGLang server logs, reference traces and metric names (sgl-project/sglang)", "0.5.23",
           "Copyright 2023-2024 SGLang Team", "Apache-2.0", "https://github.com/sgl-project/sglang", "data",
           ("01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log",
            "07_issue11970_prefill_chunk8192_v0.5.3.log",
            "chat_long_prompt.log", "chat_long_prompt.prom", "server_info.json", SGLANG),
           "Log lines from SGLang's documentation notebooks and public issues, traces SGLang's scheduler "
           "recorded, and SGLang's metric names and buckets; each folder's SOURCE.md gives the origin."),
    Notice("Vidur profiling data (microsoft/vidur)", "7d47513363ec447a741ac5e47241580b47724fbf",
           "Copyright (c) Microsoft Corporation", "MIT", "https://github.com/microsoft/vidur", "data",
           ("ops_tp1.csv", "models.csv", "attention_a100.csv", "LICENSE.vidur-MIT.txt"),
           "Measured operator times, extracted (tests/data/vidur/SOURCE.md says how)."),
)
NOTICES = SCRIPTS + FONTS + DATA

LICENCE_NAMES = {"BSD-3-Clause": "BSD 3-Clause License", "ISC": "ISC License", "MIT": "MIT License",
                 "0BSD": "BSD Zero Clause License", "Unlicense": "The Unlicense",
                 "OFL-1.1": "SIL Open Font License 1.1", "Apache-2.0": "Apache License 2.0",
                 "CC-BY-4.0": "Creative Commons Attribution 4.0 International"}
LICENCE_URLS = {"OFL-1.1": "https://openfontlicense.org", "Apache-2.0": "http://www.apache.org/licenses/LICENSE-2.0",
                "CC-BY-4.0": "https://creativecommons.org/licenses/by/4.0/"}
# The terms that must travel with every copy (BSD-3-Clause, ISC, MIT), word for word as the packages' own
# licence files give them; each applies to the copyright lines of its components above.
TEXTS = {
    "BSD-3-Clause": """Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of the copyright holder nor the names of its contributors
  may be used to endorse or promote products derived from this software
  without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.""",
    "ISC": """Permission to use, copy, modify, and/or distribute this software for any purpose
with or without fee is hereby granted, provided that the above copyright notice
and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES WITH
REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF MERCHANTABILITY AND
FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR ANY SPECIAL, DIRECT,
INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES WHATSOEVER RESULTING FROM LOSS
OF USE, DATA OR PROFITS, WHETHER IN AN ACTION OF CONTRACT, NEGLIGENCE OR OTHER
TORTIOUS ACTION, ARISING OUT OF OR IN CONNECTION WITH THE USE OR PERFORMANCE OF
THIS SOFTWARE.""",
    "MIT": """Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in
all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
THE SOFTWARE.""",
}


def covering(name: str) -> Notice | None:
    """The data notice that covers a bundled file (by its name), if any."""
    return next((n for n in DATA if Path(name).name in n.files), None)


def data_for(paths) -> tuple[Notice, ...]:
    """The data notices of the files a figure's runs read (paths or names), each once; a file of the reader's
    own has none (tests/test_notices.py checks that every file the project bundles has one)."""
    found = [covering(str(path)) for path in paths]
    return tuple(dict.fromkeys(n for n in found if n is not None))


def carried(data: tuple[Notice, ...] = ()) -> tuple[Notice, ...]:
    """What a page carries: the script bundle, and the data its runs read."""
    return SCRIPTS + tuple(data)


def _line(n: Notice) -> str:
    return f"{n.name} {n.version} — {n.holder} — {LICENCE_NAMES[n.licence]} ({n.licence}) — {n.url}"


def bundle_banner() -> str:
    """The comment on top of the inlined script bundle (survives a copy of the script alone)."""
    names = "; ".join(f"{n.name.split(' (')[0]} {n.version}: {n.licence}" for n in SCRIPTS[:8])
    text = (f"/*! Vega, Vega-Lite and vega-embed, bundled by vl-convert, with the packages they run on: "
            f"{names}; "
            "d3 modules, internmap, delaunator, topojson-client, semver: ISC; fast-json-patch, "
            "json-stringify-pretty-compact: MIT; tslib: 0BSD; robust-predicates: Unlicense. "
            f"{IDL}. Full copyright lines and licence texts: the page's \"Credits and licences\". */")
    return text


def fold_html(data: tuple[Notice, ...] = ()) -> str:
    """The page's "Credits and licences" fold (closed; opens for a reader, prints open): the project's
    licence, each component's copyright line and licence, and the texts BSD, ISC and MIT ask to carry."""
    e = html.escape
    items = carried(data)
    rows = "".join(f"<li>{e(n.name)} {e(n.version)}: {e(n.holder.rstrip('.'))}. "
                   f"{e(LICENCE_NAMES[n.licence])} ({e(n.licence)}); {e(n.url)}"
                   + (f". {e(n.about)}" if n.about else "") + "</li>"
                   for n in items)
    texts = "".join(f"<p>{e(LICENCE_NAMES[key])} ({key}), for the components so marked above, each under its "
                    f"copyright line:</p><pre>{e(TEXTS[key])}</pre>"
                    for key in TEXTS if any(n.licence == key for n in items))
    others = sorted({n.licence for n in items} - set(TEXTS))
    rest = "".join(f"<p>{e(LICENCE_NAMES[k])} ({k}): " + ("asks for no notice." if k in ("0BSD", "Unlicense")
                                                             else e(LICENCE_URLS.get(k, ""))) + "</p>"
                   for k in others)
    return (f'<details class="ww-credits"><summary>Credits and licences</summary><p>{e(OWN)}</p>'
            f"<ul>{rows}</ul>{texts}{rest}</details>")


def page_xhtml(data: tuple[Notice, ...] = ()) -> str:
    """The EPUB's "Credits and licences" page (XHTML): the fold's content, open."""
    inner = fold_html(data).replace('<details class="ww-credits"><summary>Credits and licences</summary>',
                                    '<section class="ww-credits" epub:type="credits"><h1>Credits and licences'
                                    "</h1>").replace("</details>", "</section>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en" '
            'xml:lang="en">\n<head><meta charset="utf-8"/><title>Credits and licences</title>'
            "<style>pre { white-space: pre-wrap; font-size: .8em; }</style>"
            f"</head>\n<body>\n{inner}\n</body>\n</html>\n")


def notice_text() -> str:
    """The repository's NOTICE file."""
    out = [f"{PROJECT}", "Copyright 2026 the Who Waits authors", "",
           f"Licensed under the Apache License, Version 2.0 (LICENSE). {PROJECT} bundles or inlines the",
           "third-party components and data below, each under its own licence.", ""]
    sections = (("Inlined in every standalone page and EPUB the figure command writes (the script bundle "
                 "vl-convert 1.9.0 builds)", SCRIPTS),
                ("Fonts embedded in exports", FONTS),
                ("Data sets in the repository (app/samples, tests/data), each with its licence file beside "
                 "it", DATA))
    for title, items in sections:
        out += [title, "-" * len(title)]
        for n in items:
            out.append(f"- {_line(n)}")
            if n.about:
                out.append(f"  {n.about}")
            if n.files:
                out.append(f"  Files: {', '.join(n.files)}")
        out.append("")
    for key, text in TEXTS.items():
        title = (f"{LICENCE_NAMES[key]} ({key}), for the components so marked above, under their copyright "
                 "lines")
        out += [title, "-" * len(title), text, ""]
    out += ["The SIL Open Font License 1.1: https://openfontlicense.org. The Creative Commons Attribution "
            "4.0 licence: LICENSE.AzurePublicDataset-CC-BY-4.0.txt beside the data. The Apache License 2.0: "
            "LICENSE."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(notice_text(), end="")
