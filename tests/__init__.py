"""The test suite, laid out like the code: one package per room (core, nets, gtp, analysis, play,
games, train, match, cluster, clients, tools) and helpers/ for what several of them share."""
