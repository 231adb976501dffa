package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// UserInfoSubject is where nats-server answers a client with its own
// identity and the permissions the server enforces on it (every account
// imports it from the system account; the user needs publish permission
// on it).
const UserInfoSubject = "$SYS.REQ.USER.INFO"

// PublishPermissions is what a NATS user may publish, as the server
// reports it: allowed subjects (none listed: everything) less denied ones,
// wildcards as in subscriptions.
type PublishPermissions struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Unrestricted is true when the server enforces no permissions on the
	// user at all.
	Unrestricted bool `json:"-"`
}

// MayPublish reports whether the server would accept a publish to the
// literal subject, by the rule nats-server applies: the subject matches an
// allowed pattern (or none is listed) and no denied one.
func (p PublishPermissions) MayPublish(subject string) bool {
	if p.Unrestricted {
		return true
	}
	allowed := len(p.Allow) == 0
	for _, a := range p.Allow {
		if SubjectMatches(subject, a) {
			allowed = true
			break
		}
	}
	if !allowed {
		return false
	}
	for _, d := range p.Deny {
		if SubjectMatches(subject, d) {
			return false
		}
	}
	return true
}

// SubjectMatches reports whether the literal subject matches pattern, a
// NATS subject whose tokens may be "*" (one token) or a final ">" (one or
// more tokens).
func SubjectMatches(subject, pattern string) bool {
	st, pt := strings.Split(subject, "."), strings.Split(pattern, ".")
	for i, p := range pt {
		switch {
		case p == ">" && i == len(pt)-1:
			return len(st) > i
		case i >= len(st):
			return false
		case p != "*" && p != st[i]:
			return false
		}
	}
	return len(st) == len(pt)
}

// ParseUserInfo decodes the server's answer on UserInfoSubject into the
// user's publish permissions.
func ParseUserInfo(data []byte) (PublishPermissions, error) {
	var resp struct {
		Data *struct {
			Permissions *struct {
				Publish *PublishPermissions `json:"publish"`
			} `json:"permissions"`
		} `json:"data"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return PublishPermissions{}, fmt.Errorf("malformed user info: %w", err)
	}
	switch {
	case resp.Error != nil:
		return PublishPermissions{}, fmt.Errorf("user info refused: %d %s", resp.Error.Code, resp.Error.Description)
	case resp.Data == nil:
		return PublishPermissions{}, fmt.Errorf("user info without data")
	case resp.Data.Permissions == nil || resp.Data.Permissions.Publish == nil:
		return PublishPermissions{Unrestricted: true}, nil
	}
	return *resp.Data.Permissions.Publish, nil
}
