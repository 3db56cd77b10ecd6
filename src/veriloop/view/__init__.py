"""`veriloop view`: one self-contained HTML report of run and experiment directories.

`data` reads the trajectories and builds the page's JSON payload, `page` inlines it with
the viewer's own CSS and JavaScript (assets/), and `serve` serves the page on 127.0.0.1,
rebuilding it while a run is still writing."""
