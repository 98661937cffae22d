"""The `critwin` command line: `main.main` builds the parser from one module per command group
(registration and handlers only; the analysis they call lives in bridge/, paper_checks/, theory/, empirical/)."""
