package store

// OnAuditAppend has fn called with each audit row this Store appends,
// after its transaction committed, so a witness outside Postgres (package
// audit's Witness) can keep the chain's head. fn must not block: it runs
// on the appender's goroutine. A nil fn stops the calls.
func (s *Store) OnAuditAppend(fn func(AuditRow)) {
	if fn == nil {
		s.auditAppended.Store(nil)
		return
	}
	s.auditAppended.Store(&fn)
}

// auditCommitted tells the OnAuditAppend function of row, if one is set.
func (s *Store) auditCommitted(row AuditRow) {
	if fn := s.auditAppended.Load(); fn != nil {
		(*fn)(row)
	}
}
