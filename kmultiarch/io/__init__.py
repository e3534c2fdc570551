"""Files and streams: inputs and atomic writes, policy and lock files, the progress line."""
