"""The verdict: why a device is slow, as pure functions of frames and their lookback."""
