"""VL3xx: the arithmetic verl checks at startup across keys, done before the job is queued."""
