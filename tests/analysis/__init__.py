"""KataGo's JSON analysis engine."""
