"""Init file for Supervisor jobs (empty here: the real one loads the job manager)."""
