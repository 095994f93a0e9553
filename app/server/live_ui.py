"""A running server, live: poll its /metrics and /server_info every few seconds and draw the replies'
inter-token gaps and the scheduler's gauges as they arrive. Off unless the app was started to allow it."""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts import timelines
from app.server import charts as server_charts
from app.server import metrics_frames as mf
from app.server.controls import PAGE
from app.server.live import DEFAULT_EVERY_S, ENABLE, EVERY_S, HOSTS, MAX_FAILURES, MAX_POLLS, live_config
from app.ui.cards import Card, cards_ui
from engine_model import InputError, ScrapeSet, check_server, poll


def live_ui() -> None:
    st.markdown("#### Watch a running server")
    config = live_config()
    if not config.enabled:
        st.info(f"**Live mode is off on this app.** It makes the machine this app runs on fetch a server's "
                f"`/metrics` and `/server_info`, so it stays off unless the app is started with `{ENABLE}=1` "
                f"(then loopback only; more hosts in `{HOSTS}=host1,host2`). The room deployment keeps it "
                "off. Without it, record scrapes and bring them beside a log under *A server log*.",
                icon=":material/lock:")
        return
    keys = state.keys(PAGE)
    left, right = st.columns([3, 1])
    url = left.text_input("Server URL", "http://127.0.0.1:30000", key=keys.widget("live_url"),
                          help="An SGLang server started with --enable-metrics. Allowed: loopback"
                               + (f" and {', '.join(config.hosts)}" if config.hosts else "") + ".")
    every = right.selectbox("Poll every", EVERY_S, index=EVERY_S.index(DEFAULT_EVERY_S),
                            format_func=lambda s: f"{s} s", key=keys.widget("live_every"))
    on = keys.widget("live_on")
    start, stop = st.columns(2)
    if start.button("Start", icon=":material/play_arrow:", key=keys.widget("live_start"), width="stretch"):
        st.session_state[on] = True
        st.session_state[keys.widget("live_polls")] = []
        st.session_state[keys.widget("live_failures")] = 0
    if stop.button("Stop", icon=":material/stop:", key=keys.widget("live_stop"), width="stretch"):
        st.session_state[on] = False
    running = bool(st.session_state.get(on))

    def panel() -> None:
        live_panel(url, config.hosts, running)

    st.fragment(run_every=every if running else None)(panel)()


def live_panel(url: str, hosts: tuple[str, ...], running: bool) -> None:
    keys = state.keys(PAGE)
    polls = st.session_state.setdefault(keys.widget("live_polls"), [])
    if running:
        try:
            found = poll(url, hosts)
            polls.append(found)
            del polls[:-MAX_POLLS]
            st.session_state[keys.widget("live_failures")] = 0
        except InputError as err:
            failures = st.session_state.get(keys.widget("live_failures"), 0) + 1
            st.session_state[keys.widget("live_failures")] = failures
            st.error(f"`{err.where}`: {err.problem}", icon=":material/cloud_off:")
            if failures >= MAX_FAILURES:
                st.session_state[keys.widget("live_on")] = False
                st.rerun()  # the whole page, so the panel stops polling
    failures = st.session_state.get(keys.widget("live_failures"), 0)
    if not running and failures >= MAX_FAILURES:
        st.warning(f"Stopped after {failures} failed polls in a row; press Start to try again.")
    if not polls:
        st.caption("Press Start: the first scrape arrives within one poll.")
        return
    draw(polls)


def draw(polls: list) -> None:
    scrapes = ScrapeSet([p.scrape for p in polls], [], 0, 0, 0, 0, [], [], [])
    check = check_server(None, scrapes, polls[-1].info)
    metrics, origin = check.metrics, polls[0].scrape.at
    last = metrics.intervals[-1] if metrics.intervals else None
    itl = last.tails.get("itl_s") if last else None
    p99 = itl.quantiles.get("p99") if itl else None
    gauges = polls[-1].scrape
    cards = (("Running", _gauge(metrics, "num_running_reqs")), ("Queued", _gauge(metrics, "num_queue_reqs")),
             ("Token usage", _gauge(metrics, "token_usage", "{:.0%}")),
             ("ITL p99, last interval", "—" if p99 is None else f"{p99.value:.2g} s"),
             ("Long gaps, last interval", "—" if itl is None else f"{itl.num_long:,.0f}"))
    cards_ui([Card(label, value) for label, value in cards])
    st.caption(f"{len(polls)} scrapes since Start; last at {mf.clock(gauges.at)}. "
               + " ".join([*check.understates, *polls[-1].notes]))
    if metrics.intervals:
        tails = mf.tail_rows(metrics, origin)
        st.vega_lite_chart(server_charts.itl_tail(tails, x_title="seconds since Start").to_dict(),
                           width="stretch")
    queue = mf.gauge_rows(metrics, origin).rename(columns={"at_s": "at", "value": "requests"})
    queue = queue.assign(lane="engine", series=queue["series"].map({"running requests": "running",
                                                                    "queued requests": "waiting"}))
    st.vega_lite_chart(timelines.queue_depth(queue).to_dict(), width="stretch")


def _gauge(metrics, name: str, fmt: str = "{:,.0f}") -> str:
    series = metrics.gauges.get(name)
    return fmt.format(series[-1][1]) if series else "—"
