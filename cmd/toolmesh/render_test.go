package main

import "testing"

func TestSelectFormat(t *testing.T) {
	cases := []struct {
		flag string
		tty  bool
		want OutputFormat
	}{{"json", true, FormatJSON}, {"pretty", false, FormatPretty}, {"", true, FormatPretty}, {"", false, FormatJSON}}
	for _, c := range cases {
		if got, err := SelectFormat(c.flag, c.tty); err != nil || got != c.want {
			t.Errorf("SelectFormat(%q,%v) = %v, %v", c.flag, c.tty, got, err)
		}
	}
	if _, err := SelectFormat("yaml", true); err == nil {
		t.Error("unknown format accepted")
	}
}
