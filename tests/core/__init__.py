"""The C core and the rules: boards, chains, features, scoring, sanitizers; the tree's import graph, rooms and docs."""
