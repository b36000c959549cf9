"""Speech backends behind one interface (``base``), on one inference thread (``inference``)."""
