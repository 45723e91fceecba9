"""The token-budget report (pipeline/report/)."""
