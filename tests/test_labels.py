"""Point labels never meet: at the narrowest plot and at every wider one, placed labels overlap no other label
and no point, and stay inside the plot; the first labels choose first."""

from __future__ import annotations

from app.charts.labels import MIN_PLOT_PX, box, place_labels


def _boxes(points, labels, placed, domain, plot):
    (width, height), (x_max, y_max) = plot, domain
    out = []
    for index, text, weight in labels:
        if index in placed:
            x, y, _ = points[index]
            out.append(box(x / x_max * width, height - y / y_max * height, text.split("\n"), placed[index],
                           weight))
    return out


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def test_a_cluster_keeps_its_labels_apart_at_every_width_and_the_first_labels_win():
    # the forty replies' chunk sweep: six points within 3.4 s x 1.2 s, the current one and a far reference
    points = [(0.11, 13.9, 5), (0.3, 13.3, 5), (0.45, 13.0, 5), (0.9, 12.8, 5), (1.8, 12.7, 12),
              (3.4, 12.7, 5), (12.6, 12.6, 8)]
    labels = [(4, "8,192 · current", "bold"),
              (6, "SGLang defaults:\npause 12.6 s\nfirst token 12.6 s", "bold"), (0, "512", "normal"),
              (5, "16,384", "normal"), (1, "1,024", "normal"), (2, "2,048", "normal"), (3, "4,096", "normal")]
    domain = (13.9, 15.3)
    placed = place_labels(points, labels, domain)
    assert {4, 6, 0, 5} <= set(placed)  # the current setting, the reference and both ends are named
    assert len(placed) < len(labels)  # ...and not every label fits here: the test has something to catch
    for width in (MIN_PLOT_PX[0], 500, 900):
        plot = (width, MIN_PLOT_PX[1])
        boxes = _boxes(points, labels, placed, domain, plot)
        assert all(not _overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), width
        assert all(b[0] >= 0 and b[2] <= width and b[1] >= 0 and b[3] <= MIN_PLOT_PX[1] for b in boxes)


def test_a_plain_label_stays_next_to_its_point_a_bold_one_may_step_back():
    points = [(1.0, 1.0, 5), (1.05, 1.0, 5)]
    crowded = place_labels(points, [(0, "a long label here", "normal"), (1, "another long one", "normal")],
                           (10.0, 10.0))
    assert set(crowded) == {0, 1}  # two points 1.5 px apart: one label above right, the other below left
    assert all(abs(p.dx) <= 8 and abs(p.dy) <= 8 for p in crowded.values())
