package gateway

import "strings"

// Prices of the Messages API in US dollars per million tokens, as of
// 2026-11-27. Sources: the claude-opus-5-5, -sonnet-5-5, -haiku-5-5 and
// -opus-4-5 rows were measured from what the pinned CLI (2.1.328) reports
// as total_cost_usd for a known usage (the CLI prices usage itself); the
// older rows are Anthropic's published list prices
// (https://www.anthropic.com/pricing). A cache write costs 1.25 times the
// input price (2 times for the one-hour cache), a cache read 0.1 times.
// Long-context surcharges are not modelled. Update this table when prices
// or the pinned CLI change; a model it does not list is priced at the
// most expensive row (unknownRate), so a new or made-up model name never
// makes requests cheaper.
var priceTable = []struct {
	prefix string
	rate   rate
}{
	{"claude-opus-5", rate{4, 20}},
	{"claude-sonnet-5", rate{2, 10}},
	{"claude-haiku-5", rate{0.5, 2.5}},
	{"claude-opus-4-5", rate{5, 25}},
	{"claude-opus-4", rate{15, 75}}, // claude-opus-4 and -4-1
	{"claude-sonnet-4", rate{3, 15}},
	{"claude-haiku-4", rate{1, 5}},
	{"claude-3-opus", rate{15, 75}},
	{"claude-3-7-sonnet", rate{3, 15}},
	{"claude-3-5-sonnet", rate{3, 15}},
	{"claude-3-5-haiku", rate{0.8, 4}},
	{"claude-3-haiku", rate{0.25, 1.25}},
}

// unknownRate prices a model the table does not list: its most expensive row.
var unknownRate = rate{15, 75}

// rate is a model's price per million input and output tokens.
type rate struct{ in, out float64 }

// rateOf returns model's rate: the row with the longest prefix of it.
func rateOf(model string) rate {
	best, r := -1, unknownRate
	for _, row := range priceTable {
		if strings.HasPrefix(model, row.prefix) && len(row.prefix) > best {
			best, r = len(row.prefix), row.rate
		}
	}
	return r
}

// webSearchUSD is the price of one web search by the API's server tool
// (usage.server_tool_use.web_search_requests): $10 per 1,000 searches on
// top of tokens, whatever the model. The web_fetch server tool costs only
// the tokens of what it fetched, which usage already counts
// (https://docs.claude.com/en/docs/about-claude/pricing).
const webSearchUSD = 10.0 / 1000

// tokens is one response's usage as the Messages API reports it.
type tokens struct {
	input, cacheWrite, cacheWrite1h, cacheRead, output int64
	webSearches                                        int64 // server_tool_use.web_search_requests
}

// cost is what usage t costs at rate r, in US dollars. cacheWrite counts
// every cache write; cacheWrite1h those of them that went to the one-hour
// cache.
func (r rate) cost(t tokens) float64 {
	fiveMin := max(t.cacheWrite-t.cacheWrite1h, 0)
	in := float64(t.input) + 1.25*float64(fiveMin) + 2*float64(t.cacheWrite1h) + 0.1*float64(t.cacheRead)
	return (in*r.in+float64(t.output)*r.out)/1e6 + float64(max(t.webSearches, 0))*webSearchUSD
}
