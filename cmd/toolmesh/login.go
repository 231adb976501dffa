package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/bridge"
)

// newLoginCmd is `toolmesh login`: a person authorizes the bridge's OAuth
// client of one MCP binding, once, in a browser; the worker then uses and
// refreshes the stored grant.
func newLoginCmd(g *globals) *cobra.Command {
	var config string
	var noBrowser bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login NAMESPACE",
		Short: "Authorize the bridge to reach an OAuth-protected MCP server as you (once; the worker keeps the refresh token)",
		Long: "Runs the OAuth authorization code flow with PKCE for the MCP binding NAMESPACE of the tools file " +
			"(binding.mcp with url and oauth: {login: true}): it opens the authorization server's login page in " +
			"your browser (or prints its URL), receives the answer on a loopback address, and stores the grant, " +
			"refresh token included, in the binding's token_file (by default toolmesh/oauth/NAMESPACE.json in " +
			"your state directory) with mode 0600. A worker run as the same user with the same tools file uses " +
			"and refreshes it. No token is ever printed.",
		Args: usage.OneArg("argument (the namespace of an MCP binding)", "Run `toolmesh login --config tools.yaml NAMESPACE`."),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := loginEntry(config, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			res, err := bridge.Login(ctx, e, g.loginOpener(noBrowser))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "logged in: namespace %s, %d tools; the grant is kept in %s (mode 0600)\n", e.Namespace, res.Tools, res.GrantFile)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&config, "config", "", "tools file (YAML) holding the MCP binding (required)")
	fl.BoolVar(&noBrowser, "no-browser", false, "print the authorization URL only; do not start a browser")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the login in the browser")
	return cmd
}

// loginEntry is the MCP binding ns of the tools file at path.
func loginEntry(path, ns string) (bridge.Entry, error) {
	if path == "" {
		return bridge.Entry{}, envelope.Problemf(envelope.CodeInvalidInput, "toolmesh login needs --config, the tools file with the binding").
			WithFix("Run `toolmesh login --config tools.yaml "+ns+"`.", envelope.HasPlaceholders)
	}
	entries, err := bridge.LoadFile(path)
	if err != nil {
		return bridge.Entry{}, err
	}
	for _, e := range entries {
		if e.Namespace == ns {
			return e, nil
		}
	}
	return bridge.Entry{}, envelope.Problemf(envelope.CodeInvalidConfig, "%s: no MCP binding with namespace %q", path, ns)
}

// loginOpener shows the authorization URL on stderr and, unless
// noBrowser, hands it to the desktop's browser; a browser that cannot be
// started leaves the printed URL to open by hand.
func (g *globals) loginOpener(noBrowser bool) func(context.Context, string) error {
	return func(_ context.Context, authURL string) error {
		fmt.Fprintf(g.stderr, "Open this address in a browser to log in:\n\n  %s\n\n", authURL)
		if noBrowser {
			return nil
		}
		b := browserCommand(authURL)
		if err := b.Start(); err != nil {
			fmt.Fprintf(g.stderr, "(could not start a browser: %v)\n", err)
			return nil
		}
		go func() { _ = b.Wait() }() // the opener outlives nothing: reap it
		return nil
	}
}

// browserCommand opens u with the platform's opener.
func browserCommand(u string) *exec.Cmd {
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", u)
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		return exec.Command("xdg-open", u)
	}
}
