package cluster

// OnTakenOver makes f the one told how many sessions a takeover moved
// (Deps.TakenOver), for a consumer made after the Node joined (the web
// server, which needs the Node). Call it before Run; Join's takeover has
// told the Deps' own.
func (n *Node) OnTakenOver(f func(sessions int)) { n.TakenOver = f }
