package hub

import (
	"maps"
	"slices"
	"strings"
)

// The hub's part in a cluster of replicas: the viewers of a session on
// other replicas join its presence list, and the cluster can close a
// session's sockets or have every socket check its access again.

// RemoteViewers records the viewers of a session on another replica (names
// empty: none any more); with sessionID "" it forgets every session of
// that replica (it stopped). ask says that replica has just started to
// show the session: this one answers with its own viewers. The presence
// frames follow, gathered as for local changes.
func (h *Hub) RemoteViewers(replica, sessionID string, names []string, ask bool) {
	h.do(func(st *hubState) {
		if sessionID == "" {
			for id, by := range st.remote {
				if _, ok := by[replica]; ok {
					delete(by, replica)
					st.changed(id, false)
				}
			}
			return
		}
		by := st.remote[sessionID]
		if by == nil {
			by = map[string][]string{}
			st.remote[sessionID] = by
		}
		if len(names) == 0 {
			delete(by, replica)
		} else {
			by[replica] = names
		}
		if len(by) == 0 {
			delete(st.remote, sessionID)
		}
		st.changed(sessionID, ask && len(st.subs[sessionID]) > 0)
	})
}

// remoteNames lists the session's viewers on other replicas.
func (st *hubState) remoteNames(sessionID string) []string {
	var names []string
	for _, r := range slices.Sorted(maps.Keys(st.remote[sessionID])) {
		names = append(names, st.remote[sessionID][r]...)
	}
	return names
}

// Watching says whether anything here watches the session (a page, an MCP
// client), and whether anything watches its project's asks (an inbox):
// cluster.Local. Of the events another replica wrote, a replica reads
// those of a session watched here, and only the asks of one whose project
// is.
func (h *Hub) Watching(sessionID string, projectID int64) (session, asks bool) {
	return h.Watches(sessionID), h.Watches(ProjectTopic(projectID))
}

// CloseSession ends every subscription of the session here: its pages
// reconnect and load it again (an archived session, say).
func (h *Hub) CloseSession(sessionID string) {
	h.do(func(st *hubState) {
		for s := range st.subs[sessionID] {
			st.drop(s)
		}
	})
}

// Recheck asks every session socket here to check its viewer's access
// again now (a member removed, a project archived or deleted), instead of
// at its next ping.
func (h *Hub) Recheck() {
	h.do(func(st *hubState) {
		for _, set := range st.subs {
			for s := range set {
				select {
				case s.recheck <- struct{}{}:
				default: // one is already due
				}
			}
		}
	})
}

// isSessionTopic says the topic is a session's, not a project's inbox.
func isSessionTopic(topic string) bool { return !strings.HasPrefix(topic, "project:") }

// do runs f on the hub's goroutine.
func (h *Hub) do(f func(*hubState)) {
	select {
	case h.control <- f:
	case <-h.done:
	}
}
