package tape

// RecordingTapes is how many tapes count as recording now, for the tests
// of dropped tapes.
func RecordingTapes() int { return int(recordingTapes.Load()) }
