"""What several test packages share: a GTP engine process, KataGo and Leela Zero oracles, tiny training runs."""
