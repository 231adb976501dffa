package wire

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// SubjectMatches agrees with nats-server's own matcher on every case.
func TestSubjectMatchesAgreesWithTheServer(t *testing.T) {
	cases := []struct {
		subject, pattern string
		want             bool
	}{
		{"toolmesh.call.demo.echo", "toolmesh.call.demo.>", true},
		{"toolmesh.call.demo", "toolmesh.call.demo.>", false},
		{"toolmesh.call.fs.read_file", "toolmesh.call.demo.>", false},
		{"toolmesh.call.echo", "toolmesh.call.*", true},
		{"toolmesh.call.a.b", "toolmesh.call.*", false},
		{"toolmesh.call.a.b", "toolmesh.*.a.*", true},
		{"toolmesh.call.a.b", ">", true},
		{"toolmesh.call.a.b", "toolmesh.call.a.b", true},
		{"toolmesh.call.a.b", "toolmesh.call.a", false},
		{"toolmesh.call.a", "toolmesh.call.a.b", false},
		{"toolmesh.call.a", "*.*.*", true},
		{"toolmesh.call.a", "*.>", true},
	}
	for _, tc := range cases {
		t.Run(tc.subject+"~"+tc.pattern, func(t *testing.T) {
			if got := SubjectMatches(tc.subject, tc.pattern); got != tc.want {
				t.Fatalf("SubjectMatches = %v, want %v", got, tc.want)
			}
			if srv := server.SubjectMatchesFilter(tc.subject, tc.pattern); srv != tc.want {
				t.Fatalf("nats-server says %v, the table %v", srv, tc.want)
			}
		})
	}
}

func TestMayPublish(t *testing.T) {
	cases := []struct {
		name    string
		perms   PublishPermissions
		subject string
		want    bool
	}{
		{"unrestricted", PublishPermissions{Unrestricted: true}, "toolmesh.call.x", true},
		{"nothing listed", PublishPermissions{}, "toolmesh.call.x", true},
		{"allowed", PublishPermissions{Allow: []string{"toolmesh.call.demo.>"}}, "toolmesh.call.demo.echo", true},
		{"not allowed", PublishPermissions{Allow: []string{"toolmesh.call.demo.>"}}, "toolmesh.call.fs.read", false},
		{"denied wins", PublishPermissions{Allow: []string{"toolmesh.call.>"}, Deny: []string{"toolmesh.call.fs.>"}}, "toolmesh.call.fs.read", false},
		{"deny only", PublishPermissions{Deny: []string{"toolmesh.call.fs.>"}}, "toolmesh.call.demo.echo", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.perms.MayPublish(tc.subject); got != tc.want {
				t.Fatalf("MayPublish(%q) = %v, want %v", tc.subject, got, tc.want)
			}
		})
	}
}

func TestParseUserInfo(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		want    PublishPermissions
		wantErr bool
	}{
		{"no permissions", `{"server":{},"data":{"user":"a","account":"A"}}`, PublishPermissions{Unrestricted: true}, false},
		{"publish list", `{"data":{"permissions":{"publish":{"allow":["x.>"],"deny":["x.y"]}}}}`,
			PublishPermissions{Allow: []string{"x.>"}, Deny: []string{"x.y"}}, false},
		{"error", `{"error":{"code":400,"description":"bad"}}`, PublishPermissions{}, true},
		{"garbage", `nope`, PublishPermissions{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUserInfo([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got.Unrestricted != tc.want.Unrestricted || len(got.Allow) != len(tc.want.Allow) || len(got.Deny) != len(tc.want.Deny) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
