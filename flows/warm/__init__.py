"""The old home of the warm starter (now ``evalduck.flows.local.warm``), kept for one release for its
``flow_run`` command: a work pool made before the move names it until the next `evalduck serve` rewrites it."""
