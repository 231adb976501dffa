package bridge

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oauthHandler is the SDK's client-credentials handler for c: on a 401 or
// 403 it reads the server's protected-resource metadata (RFC 9728), then
// its authorization server's metadata (RFC 8414), and gets a token at the
// token endpoint; its token source gets a new token when the last expires.
func oauthHandler(c *OAuthClient) (auth.OAuthHandler, error) {
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: c.ClientID, Issuer: c.Issuer,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: c.secret()}},
	})
}
