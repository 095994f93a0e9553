"""Your metrics beside the log: SGLang's /metrics scrapes and /server_info, each scrape interval set beside
the Prefill lines of the same seconds, and what the replies' inter-token gaps say about the log's verdict."""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts import timelines
from app.server import charts as server_charts
from app.server import compute
from app.server import frames as sf
from app.server import metrics_frames as mf
from app.server.controls import METRICS, PAGE
from app.server.input import (
    INFO_LIMIT_MB,
    METRICS_EXAMPLE,
    METRICS_LIMIT_MB,
    SAMPLES_DIR,
    check_pasted,
    decode_upload,
)
from app.server.page import cache_key, error_ui
from app.ui.cards import Card, cards_ui
from app.ui.chart import chart_ui
from app.ui.controls import control_ui
from app.ui.fold import folded
from engine_model import InputError, ServerCheck

RECORD = ("while sleep 5; do date -u +'# scraped_at %FT%TZ'; curl -s http://127.0.0.1:30000/metrics; done "
          ">> scrapes.prom\ncurl -s http://127.0.0.1:30000/server_info > server_info.json")
SAYS = {"confirms": ("success", ":material/check_circle:"), "does_not_show": ("warning", ":material/help:"),
        "cannot_tell": ("info", ":material/info:")}


def metrics_ui(read: compute.ReadLog, text: str) -> None:
    st.markdown("#### Your metrics beside the log")
    st.caption("With `--enable-metrics`, SGLang exports `sglang:inter_token_latency_seconds` and more at "
               "`/metrics`. Bring one or more scrapes, each after a `# scraped_at <time>` line, and, if you "
               "have it, `/server_info`: each scrape interval is set beside the Prefill lines of the same "
               "seconds. Percentiles are interpolated inside the histogram's buckets.")
    with folded("How to record scrapes", state.keys(PAGE).widget("metrics_how")) as is_open:
        if is_open:
            st.code(RECORD, language="bash")
            st.caption("Write the markers on the server log's clock: SGLang stamps its log in the server's "
                       "local time (`date +'# scraped_at %FT%T'` writes local time).")
    scrapes, info = metrics_source_ui(control_ui(PAGE, METRICS, radio=True))
    if not scrapes and info is None:
        return
    try:
        check = compute.check(text, scrapes, info, read.timeline.rank)
    except InputError as err:
        error_ui(err, "scrape or /server_info")
        return
    if check.metrics is not None:
        said_ui(check)
        tails_ui(check, read, text)
    if check.info is not None:
        info_ui(check)


def metrics_source_ui(choice: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, str] | None]:
    """((name, text) of each scrape file, (name, text) of /server_info or None), as the person chose."""
    keys = state.keys(PAGE)
    if choice == "example":
        prom, info = (SAMPLES_DIR / name for name in METRICS_EXAMPLE)
        return ((("the example's scrapes", prom.read_text()),),
                ("the example's /server_info", info.read_text()))
    if choice == "paste":
        left, right = st.columns(2)
        scrapes = left.text_area(f"/metrics scrapes (up to {METRICS_LIMIT_MB} MB)", height=150,
                                 key=keys.widget("metrics_paste"),
                                 placeholder="# scraped_at 2026-03-02T14:00:05Z\n"
                                             "sglang:inter_token_latency_seconds_bucket{…,le=\"0.002\"} 0.0")
        info = right.text_area("/server_info (JSON, optional)", height=150, key=keys.widget("info_paste"))
        try:
            found = ((("pasted scrapes", check_pasted(scrapes, "the pasted scrapes", METRICS_LIMIT_MB)),)
                     if scrapes.strip() else ())
            given = check_pasted(info, "the pasted /server_info", INFO_LIMIT_MB) if info.strip() else None
            return found, None if given is None else ("pasted /server_info", given)
        except InputError as err:
            error_ui(err, "text")
            return (), None
    if choice == "upload":
        left, right = st.columns(2)
        files = left.file_uploader(f"Scrape files (text, up to {METRICS_LIMIT_MB} MB each)",
                                   accept_multiple_files=True, key=keys.widget("metrics_files"),
                                   max_upload_size=METRICS_LIMIT_MB)
        info = right.file_uploader("/server_info (JSON, optional)", key=keys.widget("info_file"),
                                   max_upload_size=INFO_LIMIT_MB)
        try:
            found = tuple((f.name, decode_upload(f.getvalue(), f.name, METRICS_LIMIT_MB)[0])
                          for f in files or ())
            return found, ((info.name, decode_upload(info.getvalue(), info.name, INFO_LIMIT_MB)[0])
                           if info is not None else None)
        except InputError as err:
            error_ui(err, "file")
            return (), None
    return (), None


def said_ui(check: ServerCheck) -> None:
    """What the metrics say beside the log's verdict, and why the tail may understate a stall."""
    kind, icon = SAYS[check.metrics_say]
    getattr(st, kind)(check.sentence, icon=icon)
    for note in check.understates:
        st.caption(f":material/warning: {note}")
    metrics = check.metrics
    itl = metrics.tails.get("itl_s")
    if itl is not None:
        row = []
        for name in mf.TAIL_SERIES:
            q = itl.quantiles.get(name)
            where = "" if q is None else f"interpolated in the {mf.bucket_text(q.lower, q.upper)} bucket"
            value = "—" if q is None else f"{q.value:.2g} s"
            row.append(Card(f"ITL {mf.TAIL_LABELS[name]}", value, help=where))
        row.append(Card(f"Gaps over {itl.long_bound:g} s (of {itl.count:,.0f})", f"{itl.num_long:,.0f}"))
        cards_ui(row)
    st.caption(f"Over the window: {metrics.window}. " + " ".join(metrics.notes))


def tails_ui(check: ServerCheck, read: compute.ReadLog, text: str) -> None:
    metrics = check.metrics
    key = cache_key(text, repr(check.aligned))
    if check.aligned:
        epoch = check.aligned[0].start_at - check.aligned[0].start_s  # the log's first line
        _, end_at = sf.log_span(read.timeline)
        end_at = max(end_at, check.aligned[-1].end_s)
        tails, prefills = mf.tail_rows(metrics, epoch), sf.log_prefills(read.timeline, False)
        chart_ui(PAGE, "metrics_itl", "The replies' inter-token gaps, beside the Prefill lines",
                 "Each segment is one scrape interval's ITL percentile (log scale; interpolated inside its "
                 "bucket), over the log's Prefill lines as bars in the prefill colour. The chunked-prefill "
                 "stall shows as intervals with no gap while replies run (pink), then long gaps, after a row "
                 "of full chunks.",
                 lambda: server_charts.itl_tail(tails, prefills, end_at, silent=mf.silent_rows(check)),
                 cache_key=key)
        with folded("Each scrape interval, and the queue as the gauges said it",
                    state.keys(PAGE).widget("metrics_intervals"), icon=":material/table_rows:") as is_open:
            if is_open:
                _intervals_ui(check, metrics, epoch, end_at, key)
    else:
        st.caption(f"Not set beside the log: {check.alignment}")
    with folded("Every histogram over the window, and what was not read",
                state.keys(PAGE).widget("metrics_all")) as is_open:
        if is_open:
            st.dataframe(mf.tails_table(metrics), hide_index=True, width="stretch")
            unread_ui(check)


def _intervals_ui(check: ServerCheck, metrics, epoch: float, end_at: float, key) -> None:
    """Each scrape interval as a row, and the running / queued gauges on the log's clock."""
    st.dataframe(mf.interval_table(check), hide_index=True, width="stretch")
    queue = mf.gauge_rows(metrics, epoch)
    frame = queue.rename(columns={"at_s": "at", "value": "requests"}).assign(
        lane="engine", series=queue["series"].map({"running requests": "running",
                                                   "queued requests": "waiting"}))
    chart_ui(PAGE, "metrics_queue", "Running and queued requests, as the gauges said",
             "`sglang:num_running_reqs` and `num_queue_reqs` at each scrape (SGLang sets them when it "
             "logs a line).", lambda: timelines.queue_depth(frame, end_at=end_at), cache_key=key)


def unread_ui(check: ServerCheck) -> None:
    found = check.scrapes
    st.markdown(f"**{found.num_lines:,} lines read:** {found.num_samples:,} samples of the families used, "
                f"{found.num_other:,} of other families or programs (not read), {found.num_malformed:,} "
                f"malformed; {len(found.scrapes)} scrapes.")
    for where, why in found.malformed_examples:
        st.caption(f"{where}: {why}")
    for why in [*found.left_out, *found.warnings]:
        st.caption(why)


def info_ui(check: ServerCheck) -> None:
    info = check.info
    st.markdown(f"**/server_info** ({info.source}, SGLang {info.version or 'version not given'}): its "
                "resolved settings fill what the log does not say.")
    for m in check.mismatches:
        st.warning(f"The log and /server_info disagree on `{m.key}`: {m.log} in the log, {m.server_info} in "
                   "/server_info. Are they from the same server run?", icon=":material/compare_arrows:")
    for warning in info.warnings:
        st.caption(warning)
    with folded("/server_info beside the log's settings", state.keys(PAGE).widget("info_table")) as is_open:
        if is_open:
            st.dataframe(mf.info_table(check), hide_index=True, width="stretch")
