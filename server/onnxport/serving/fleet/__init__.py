"""Fleet verdicts (docs/reference/fleet.md): browsers report what ran right and how fast on their device class; the
store folds each report into one vote per client and group, and publishes the agreed verdicts and times."""
