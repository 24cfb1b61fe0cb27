package hub

// What the cluster and the tests ask the hub: whether, and how many,
// subscribers a topic has here.

// watch counts a subscription of topic in or out.
func (h *Hub) watch(topic string, d int) {
	h.watchMu.Lock()
	defer h.watchMu.Unlock()
	if h.watching[topic] += d; h.watching[topic] <= 0 {
		delete(h.watching, topic)
	}
}

// Watches says whether anything here subscribes to topic: a page, an
// inbox or an MCP client. One that subscribes after it said no reads what
// it shows from the log after that (an MCP client reads the resource it
// subscribed to), so it misses no event written before.
func (h *Hub) Watches(topic string) bool {
	h.watchMu.Lock()
	defer h.watchMu.Unlock()
	return h.watching[topic] > 0
}

// Subscribers counts the subscriptions of topic the hub's goroutine holds
// now: it asks that goroutine, so one whose Subscribe returned is counted.
func (h *Hub) Subscribers(topic string) int {
	n := make(chan int, 1)
	h.do(func(st *hubState) { n <- len(st.subs[topic]) })
	select {
	case c := <-n:
		return c
	case <-h.done:
		return 0
	}
}
