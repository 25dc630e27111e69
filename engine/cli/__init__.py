"""The command-line front door (python -m engine): a start-up that answers GUIs before the net loads (startup), ahead-of-time tuning (tune, python -m engine tune) and the check of everything a GUI needs (doctor, python -m engine doctor).
May import any of engine (it sits above gtp, analysis and nets); never train."""
