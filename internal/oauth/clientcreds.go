package oauth

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// NewClientCredentialsHandler is the OAuth handler of a confidential
// client that needs no person (the client-credentials grant): on a 401 or
// 403 it reads the server's protected-resource metadata (RFC 9728), then
// its authorization server's (RFC 8414), and gets a token at the token
// endpoint; its token source gets a new token when the last expires.
// issuer, when set, is the authorization server the client is registered
// with: a server naming another is refused.
func NewClientCredentialsHandler(clientID, secret, issuer string) (auth.OAuthHandler, error) {
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: clientID, Issuer: issuer,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
	})
}
