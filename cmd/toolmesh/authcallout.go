package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/authcallout"
	"github.com/toolmesh/toolmesh/internal/identity"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// authCalloutFlags are the flags of `toolmesh authcallout`.
type authCalloutFlags struct {
	policy    string
	issuer    string
	audiences []string
	seedEnv   string
	xkeyEnv   string
}

// newAuthCalloutCmd is `toolmesh authcallout`: the NATS auth callout
// service that lets people connect with their OpenID token.
func newAuthCalloutCmd(g *globals) *cobra.Command {
	var f authCalloutFlags
	cmd := usage.Command("authcallout --policy FILE --auth-issuer URL --auth-audience URI --issuer-seed-env VAR", "Serve NATS auth callout: admit people by their OpenID token, as the policy maps them",
		func(cmd *cobra.Command) error {
			svc, err := f.service(cmd, g)
			if err != nil {
				return err
			}
			nc, err := g.dial(cmd.Context(), "authcallout")
			if err != nil {
				return err
			}
			defer nc.Close()
			fmt.Fprintf(g.stderr, "toolmesh authcallout: answering %s\n", authcallout.Subject)
			if err := svc.Serve(cmd.Context(), nc); err != nil {
				return envelope.NewProblem(envelope.CodeConnectionLost, "authcallout: "+err.Error())
			}
			return nil
		})
	cmd.Long = "Connect as a user the server's auth_callout lists in auth_users and answer its authorization requests:\n" +
		"a client presenting an OpenID token as its NATS token (toolmesh --token, or the MCP gateway's\n" +
		"--auth-as-person) becomes the NATS user the policy maps it to. Needs nats-server 2.10 or later."
	fl := cmd.Flags()
	fl.StringVar(&f.policy, "policy", "", "the policy file: which token claims map to which account, user and tool namespaces")
	fl.StringVar(&f.issuer, "auth-issuer", "", "the OpenID issuer URL whose tokens are accepted")
	fl.StringSliceVar(&f.audiences, "auth-audience", nil, "an aud value accepted (repeatable): the mesh's own, and the MCP gateway's --auth-audience if it connects people as themselves")
	fl.StringVar(&f.seedEnv, "issuer-seed-env", "", "name of an environment variable holding the seed (SA…) of the account key auth_callout names as issuer")
	fl.StringVar(&f.xkeyEnv, "xkey-seed-env", "", "name of an environment variable holding the curve seed (SX…) of auth_callout's xkey, when requests are encrypted")
	return cmd
}

// service loads the policy, keys and issuer and makes the service.
func (f *authCalloutFlags) service(cmd *cobra.Command, g *globals) (*authcallout.Service, error) {
	if f.policy == "" || f.issuer == "" || len(f.audiences) == 0 || f.seedEnv == "" {
		return nil, envelope.NewProblem(envelope.CodeInvalidConfig, "authcallout needs --policy, --auth-issuer, --auth-audience and --issuer-seed-env")
	}
	pol, err := identity.LoadPolicy(f.policy)
	if err != nil {
		return nil, err
	}
	issuer, err := seedFromEnv(f.seedEnv)
	if err != nil {
		return nil, err
	}
	cfg := authcallout.Config{Policy: pol, Issuer: issuer, Logger: g.log}
	if f.xkeyEnv != "" {
		if cfg.XKey, err = seedFromEnv(f.xkeyEnv); err != nil {
			return nil, err
		}
	}
	if cfg.Validator, err = oauth.NewValidator(cmd.Context(), oauth.Config{Issuer: f.issuer, Audiences: f.audiences}); err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidConfig, err.Error())
	}
	svc, err := authcallout.New(cfg)
	if err != nil {
		return nil, envelope.NewProblem(envelope.CodeInvalidConfig, err.Error())
	}
	return svc, nil
}

// seedFromEnv is the nkey whose seed the variable name holds.
func seedFromEnv(name string) (nkeys.KeyPair, error) {
	seed := os.Getenv(name)
	if seed == "" {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "%s: the variable is empty or unset", name)
	}
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "%s: not an nkey seed: %v", name, err)
	}
	return kp, nil
}
