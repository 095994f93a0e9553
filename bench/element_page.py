"""A bare Streamlit page of N elements of one kind, for bench/element_cost.py: `?kind=slider&n=40`."""

import streamlit as st

KINDS = ("markdown", "caption", "button", "button_help", "metric", "metric_help", "selectbox", "slider",
         "toggle", "checkbox", "number_input", "expander", "columns", "container", "info", "download",
         "popover", "html", "fold", "expander_icon", "segmented", "step_buttons", "step_segmented")
STEPS = [f"{i}. A tour step of a few words" for i in range(1, 8)]

if __name__ == "__main__":  # `streamlit run` runs the page; bench/element_cost.py only imports KINDS
    kind, n = st.query_params.get("kind", "none"), int(st.query_params.get("n", "40"))
    st.title("Elements")
    for i in range(n if kind in KINDS else 0):
        if kind == "markdown":
            st.markdown(f"Some **text** number {i} with a `code` bit.")
        elif kind == "caption":
            st.caption(f"caption {i}, a little longer text")
        elif kind in ("button", "button_help"):
            st.button(f"Button {i}", key=f"b{i}", help="help" if kind == "button_help" else None)
        elif kind in ("metric", "metric_help"):
            st.metric(f"Metric {i}", "12.6 s", "-3 s", border=True,
                      help="help" if kind == "metric_help" else None)
        elif kind == "selectbox":
            st.selectbox(f"Select {i}", ["a", "b", "c"], key=f"s{i}")
        elif kind == "slider":
            st.slider(f"Slider {i}", 0, 100, 5, key=f"l{i}")
        elif kind == "toggle":
            st.toggle(f"Toggle {i}", key=f"t{i}")
        elif kind == "number_input":
            st.number_input(f"Number {i}", value=None, key=f"n{i}")
        elif kind == "expander":
            st.expander(f"Expander {i}")
        elif kind == "expander_icon":
            st.expander(f"Expander {i}", icon=":material/tune:")
        elif kind == "fold":  # a closed fold as app/ui/fold.py draws it: keyed, an icon, remembers clicks
            st.expander(f"Fold {i}", key=f"f{i}", icon=":material/tune:", on_change=lambda: None)
        elif kind == "columns":
            st.columns(4)
        elif kind == "container":
            st.container(border=True).write("x")
        elif kind == "checkbox":
            st.checkbox(f"Checkbox {i}", key=f"c{i}")
        elif kind == "download":
            st.download_button(f"Download {i}", b"x", file_name="x.txt", on_click="ignore",
                               icon=":material/public:", help="help")
        elif kind == "popover":
            st.popover(f"Popover {i}").write("x")
        elif kind == "html":
            st.html(f"<b>html {i}</b>")
        elif kind == "segmented":
            st.segmented_control(f"Segmented {i}", ["a", "b", "c"], key=f"g{i}")
        elif kind == "step_buttons":  # a guided tour as app/story/tour.py draws it: a row of buttons
            row = st.container(border=True).container(horizontal=True, gap="small")
            row.markdown("**Guided tour**  \nclick a step", width=100)
            for j, step in enumerate(STEPS):
                row.button(step, key=f"p{i}.{j}", width="stretch")
        elif kind == "step_segmented":  # ... and as one segmented control
            st.container(border=True).segmented_control("Guided tour", STEPS, key=f"q{i}", width="stretch")
        elif kind == "info":
            st.info(f"info {i}", icon=":material/link:")
