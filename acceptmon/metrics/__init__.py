"""Stage 4a: records → running totals (``store``) → the metric catalogue and collector (``collect``)."""
