package gateway

import (
	"fmt"
	"strconv"
	"sync"
)

// spends holds what the model requests under way may cost, per session
// and per project, so that requests sent at once cannot together spend
// past a limit that each alone is under: the spending a request adds is
// known only once its response is done. A request is let through if
// nothing else is under way in its session and project, or if its
// estimate and theirs fit in what is left. So a session near its limit
// runs its requests one at a time, and overshoots its limit by at most
// one request, as the CLI's own --max-budget-usd does.
type spends struct {
	mu      sync.Mutex
	pending map[string]*reserved
}

// reserved is what the requests under way in one scope may cost.
type reserved struct {
	n   int
	usd float64
}

// reserve books estimate against the session's and the project's limits;
// it returns the booking's release, or why the request must wait.
func (s *spends) reserve(gr grant, rules Rules, estimate float64) (release func(), refused string) {
	scopes := []struct {
		key  string
		left float64
		what string
	}{
		{"session:" + gr.sessionID, rules.SessionLeftUSD, "this session's spending limit"},
		{"project:" + strconv.FormatInt(gr.projectID, 10), rules.ProjectLeftUSD, "the project's daily spending limit"},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]*reserved{}
	}
	for _, sc := range scopes {
		p := s.pending[sc.key]
		if sc.left >= 0 && p != nil && p.n > 0 && p.usd+estimate > sc.left {
			return nil, fmt.Sprintf("Only %s is left under %s, and %d model requests under way may spend it. Wait for them to finish.",
				usd(sc.left), sc.what, p.n)
		}
	}
	for _, sc := range scopes {
		p := s.pending[sc.key]
		if p == nil {
			p = &reserved{}
			s.pending[sc.key] = p
		}
		p.n++
		p.usd += estimate
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, sc := range scopes {
				if p := s.pending[sc.key]; p != nil {
					if p.n--; p.n <= 0 {
						delete(s.pending, sc.key)
					} else {
						p.usd -= estimate
					}
				}
			}
		})
	}, ""
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }
