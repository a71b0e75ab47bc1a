"""Where a campaign's workers run: ``local`` (processes on this machine) or ``ray`` (a Ray cluster)."""
