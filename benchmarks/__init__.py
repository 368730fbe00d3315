"""The benchmark harness: each ``bench_<name>.py`` measures real code against a baseline."""
