package mcpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// proxyProtocol is the protocol the proxy speaks to /mcp: the last one in
// which a server may send requests of its own (elicitation) and
// notifications outside a request (resource updates) on a session.
const proxyProtocol = "2025-11-25"

// Proxy serves MCP over in and out (stdin and stdout of `parley mcp`) by
// relaying to Parley's streamable HTTP endpoint at url with token: the
// same tools and resources, resource updates and elicitations passed
// through. It returns when the local client closes the stream or ctx ends.
func Proxy(ctx context.Context, url, token string, in io.ReadCloser, out io.WriteCloser) error {
	var rs *mcp.ClientSession // set before the local client can call anything
	local := mcp.NewServer(&mcp.Implementation{Name: "parley", Title: "Parley", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: instructions,
		SubscribeHandler: func(ctx context.Context, r *mcp.SubscribeRequest) error {
			return rs.Subscribe(ctx, &mcp.SubscribeParams{URI: r.Params.URI})
		},
		UnsubscribeHandler: func(ctx context.Context, r *mcp.UnsubscribeRequest) error {
			return rs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: r.Params.URI})
		},
	})
	p := &proxy{local: local}
	remote := mcp.NewClient(&mcp.Implementation{Name: "parley-mcp", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler:     p.elicit,
		ResourceUpdatedHandler: p.updated,
	})
	rs, err := remote.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: BearerClient(token)},
		&mcp.ClientSessionOptions{ProtocolVersion: proxyProtocol})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer rs.Close()
	if err := mirror(ctx, rs, local); err != nil {
		return err
	}
	ls, err := local.Connect(ctx, &mcp.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	p.session.Store(ls)
	err = ls.Wait()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// mirror offers the remote's tools and resource templates locally, each
// forwarded as it is.
func mirror(ctx context.Context, rs *mcp.ClientSession, local *mcp.Server) error {
	tools, err := rs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	for _, t := range tools.Tools {
		local.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return rs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	templates, err := rs.ListResourceTemplates(ctx, nil)
	if err != nil {
		return fmt.Errorf("list resource templates: %w", err)
	}
	for _, t := range templates.ResourceTemplates {
		local.AddResourceTemplate(t, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return rs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
		})
	}
	return nil
}

// proxy passes what the remote sends on its own to the local client.
type proxy struct {
	local   *mcp.Server
	session atomic.Pointer[mcp.ServerSession]
}

func (p *proxy) elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ls := p.session.Load()
	if ls == nil {
		return nil, errors.New("the local client is not connected yet")
	}
	return ls.Elicit(ctx, r.Params)
}

func (p *proxy) updated(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
	_ = p.local.ResourceUpdated(ctx, r.Params)
}

// BearerClient is an HTTP client that sends token, a Parley API token,
// with every request: what an MCP client of Parley's /mcp needs.
func BearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
}

// bearer adds the API token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
