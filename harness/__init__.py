"""Drives the running app from outside, for benchmarks/ and tests/ alike: the web server and
worker processes (:mod:`.servers`), a keep-alive HTTP annotator (:mod:`.http_annotator`) and the
CPU accounting of process trees (:mod:`.cpu_usage`). Never imported by the app."""
