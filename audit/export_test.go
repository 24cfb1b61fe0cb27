package audit

// SetWitnessMaxBytes sets the size past which w compacts its file.
func SetWitnessMaxBytes(w *Witness, n int64) { w.maxBytes = n }
