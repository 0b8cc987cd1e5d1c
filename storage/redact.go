package storage

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Redaction. A location is printed in messages (errors, warnings, the CLI's output)
// only through RedactLocation or RedactURL, which keep what identifies the table and
// replace everything that may be a credential with "REDACTED":
//
//   - user information ("user:password@") anywhere: in the URL itself and in any URL
//     nested in a parameter value (endpoint=http://u:p@host), percent-encoded or not;
//   - the value of every query parameter not on the allow-list below (the options of
//     this module's backends, none of which is a secret): sig=, X-Amz-Signature=,
//     access_token=, aws_secret_access_key=, a SAS token's fields; and whole any part of
//     the query that is not name=value with a name that looks like one (a bare token);
//   - the fragment, and an unparsable URL after its scheme.
//
// Values of allowed parameters are printed after the same treatment (an endpoint's
// user information and non-allowed parameters are redacted in turn, to a bounded
// depth). RedactText does the part that can be done on free text, user information
// in any URL it contains, for messages of libraries that print URLs their own way;
// RedactError applies it to an error's message and keeps the error's chain for
// errors.Is. ParseLocation refuses user information anywhere in a location, URLs with
// a query or fragment inside a parameter, and query parts that are not name=value
// (checkParams), so no backend ever receives them or prints them in its errors.

// redacted replaces a secret in messages.
const redacted = "REDACTED"

// safeParams are the location query parameters (lower case) whose values messages may
// print: the options the S3, GCS and Azure backends take (see their package docs and
// gocloud.dev's URL parameters), and single_writer.
var safeParams = map[string]bool{
	// every backend
	"single_writer": true,
	// S3 (storage/s3 and gocloud.dev/aws)
	"region": true, "endpoint": true, "use_path_style": true, "s3forcepathstyle": true, "disable_https": true,
	"accelerate": true, "profile": true, "request_checksum_calculation": true, "response_checksum_validation": true,
	"dualstack": true, "fips": true, "hostname_immutable": true, "rate_limiter_capacity": true, "awssdk": true,
	"anonymous": true,
	// GCS
	"universe_domain": true,
	// Azure
	"storage_account": true, "domain": true, "protocol": true, "localemu": true, "cdn": true,
}

// maxRedactDepth bounds how deep URLs nested in parameter values are taken apart;
// deeper values are redacted whole.
const maxRedactDepth = 4

// paramName matches a query parameter name that is printed even when its value is not
// (a bare "?token" may itself be the secret).
var paramName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// RedactLocation returns a table location (a path or a URL, as a user wrote it) as
// messages may print it: see RedactURL. A plain path is returned as it is; a string
// that names a scheme but does not parse as a URL keeps only its scheme.
func RedactLocation(s string) string {
	scheme, isURL := splitScheme(s)
	switch {
	case scheme == "":
		return s // a local path
	case !isURL:
		// "s3:bucket/t" or "s3:user:pw@bucket": a mistyped URL; keep what follows the
		// last '@' only.
		if i := strings.LastIndexByte(s, '@'); i >= 0 {
			return s[:len(scheme)+1] + redacted + s[i:]
		}
		return RedactText(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return s[:len(scheme)] + "://" + redacted
	}
	return redactURL(u, 0)
}

// RedactURL returns u as messages may print it: user information and the fragment
// replaced by REDACTED, the value of every query parameter not on the allow-list
// replaced by REDACTED, and allowed values (an endpoint URL) redacted the same way.
// Parameter order and spelling are kept.
func RedactURL(u *url.URL) string { return redactURL(u, 0) }

func redactURL(u *url.URL, depth int) string {
	c := *u
	if c.User != nil {
		c.User = url.User(redacted)
	}
	if c.Opaque != "" {
		c.Opaque = redactOpaque(c.Opaque)
	}
	if c.Fragment != "" || c.RawFragment != "" {
		c.Fragment, c.RawFragment = redacted, ""
	}
	c.RawQuery = redactQuery(c.RawQuery, depth)
	return RedactText(c.String())
}

// redactOpaque redacts user information in the opaque part of "scheme:opaque".
func redactOpaque(s string) string {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return redacted + s[i:]
	}
	return s
}

// redactQuery redacts a raw query parameter by parameter, keeping their order.
func redactQuery(raw string, depth int) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		rk, rv, hasValue := strings.Cut(p, "=")
		k, err := url.QueryUnescape(rk)
		if err != nil || !paramName.MatchString(k) || !hasValue {
			parts[i] = redacted // not a name=value parameter: maybe a bare token
			continue
		}
		if !safeParams[strings.ToLower(k)] || depth >= maxRedactDepth {
			parts[i] = rk + "=" + redacted
			continue
		}
		v, err := url.QueryUnescape(rv)
		if err != nil {
			parts[i] = rk + "=" + redacted
			continue
		}
		if rv2 := redactValue(v, depth+1); rv2 != v {
			parts[i] = rk + "=" + escapeValue(rv2)
		}
	}
	return strings.Join(parts, "&")
}

// escapeValue escapes what would end or change a query value ('&', '#', '%', '+',
// spaces and control bytes), keeping a URL in it readable.
func escapeValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("&#%+", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// redactValue redacts an allowed parameter's value: a URL is redacted as a location
// (its user information, fragment and non-allowed parameters); anything else with an
// '@' loses what precedes it.
func redactValue(v string, depth int) string {
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			i := strings.Index(v, "://")
			return v[:i] + "://" + redacted
		}
		return redactURL(u, depth)
	}
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		return redacted + v[i:]
	}
	return v
}

// userinfoInText matches "scheme://" followed by user information (up to the last
// '@' of the authority) in free text.
var userinfoInText = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s"'<>@]*@(?:[^/?#\s"'<>@]*@)*`)

// RedactText replaces the user information of every URL in s (scheme://user:pw@host,
// also as Go's net/http prints it, "user:***@") with REDACTED, for messages of
// libraries that print URLs their own way. Query values are left alone: free text
// does not say which parameters are the user's.
func RedactText(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	return userinfoInText.ReplaceAllString(s, "${1}"+redacted+"@")
}

// RedactError returns err with its message passed through RedactText; errors.Is and
// errors.As see err's chain unchanged. Nil stays nil.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactText(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// LocationSecrets returns the strings of a location that RedactLocation would not
// print (user information, its user and password, values of parameters not on the
// allow-list, the fragment), raw and percent-decoded, longest first; nil for a plain
// path. A program that prints messages from code it does not control removes them
// from its output as a last line of defence (the CLI does, for every message on
// standard error).
func LocationSecrets(location string) []string {
	scheme, isURL := splitScheme(location)
	if scheme == "" {
		return nil
	}
	set := map[string]bool{}
	add := func(ss ...string) {
		for _, s := range ss {
			if s != "" && s != redacted {
				set[s] = true
				if d, err := url.PathUnescape(s); err == nil {
					set[d] = true
				}
				if d, err := url.QueryUnescape(s); err == nil {
					set[d] = true
				}
			}
		}
	}
	if !isURL {
		if i := strings.LastIndexByte(location, '@'); i >= 0 {
			addUserinfo(add, location[len(scheme)+1:i])
		}
	} else {
		collectSecrets(location, add, 0)
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// addUserinfo adds "user:password", the user and the password.
func addUserinfo(add func(...string), ui string) {
	ui = strings.TrimPrefix(ui, "//")
	user, pw, _ := strings.Cut(ui, ":")
	add(ui, user, pw)
}

// collectSecrets adds the secrets of a URL string (see LocationSecrets).
func collectSecrets(s string, add func(...string), depth int) {
	i := strings.Index(s, "://")
	if i < 0 {
		if j := strings.LastIndexByte(s, '@'); j >= 0 {
			addUserinfo(add, s[:j])
		}
		return
	}
	rest := s[i+3:]
	// The authority ends at the first '/', '?' or '#' after its last '@' (a password
	// may hold '/'); look for user information textually, whether or not s parses.
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	if j := strings.LastIndexByte(rest[:end], '@'); j >= 0 {
		addUserinfo(add, rest[:j])
	}
	u, err := url.Parse(s)
	if err != nil {
		return
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		add(u.User.String(), u.User.Username(), pw)
	}
	add(u.Fragment, u.RawFragment)
	for _, p := range strings.Split(u.RawQuery, "&") {
		rk, rv, hasValue := strings.Cut(p, "=")
		k, err := url.QueryUnescape(rk)
		if err != nil || !paramName.MatchString(k) || !hasValue {
			add(p, rk)
			continue
		}
		v, verr := url.QueryUnescape(rv)
		if !safeParams[strings.ToLower(k)] || depth >= maxRedactDepth || verr != nil {
			add(rv, v)
			continue
		}
		collectSecrets(v, add, depth+1)
	}
}

// checkParams refuses what a location's query may not carry: a URL with user
// information in a parameter's value (endpoint=http://user:pw@host: ErrCredentialsInURL),
// a URL with a query or fragment there (an SDK would send them with every request and
// print them in its errors), a parameter without a value or with a name that is not a
// name (a bare token). Its messages print the location redacted.
func checkParams(u *url.URL) error {
	if u.RawQuery == "" {
		return nil
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		rk, rv, ok := strings.Cut(p, "=")
		k, err := url.QueryUnescape(rk)
		if !ok || err != nil || !paramName.MatchString(k) {
			return fmt.Errorf("storage: table location %s: a query parameter without a name=value form", RedactURL(u))
		}
		v, err := url.QueryUnescape(rv)
		if err != nil {
			return fmt.Errorf("storage: table location %s: parameter %s: invalid percent-encoding", RedactURL(u), k)
		}
		if hasUserinfo(v) {
			return fmt.Errorf("%w: table location %s, parameter %s%s", ErrCredentialsInURL, RedactURL(u), k, useCredentialChain)
		}
		if i := strings.Index(v, "://"); i >= 0 && strings.ContainsAny(v[i:], "?#") {
			return fmt.Errorf("storage: table location %s: parameter %s: a URL with a query or fragment is not accepted here", RedactURL(u), k)
		}
	}
	return nil
}

// hasUserinfo reports whether v is a URL with user information, whether or not it
// parses ("http://user:pw@host", "http://user:p/w@host").
func hasUserinfo(v string) bool {
	i := strings.Index(v, "://")
	if i < 0 {
		return false
	}
	rest := v[i+3:]
	if end := strings.IndexAny(rest, "?#"); end >= 0 {
		rest = rest[:end]
	}
	return strings.Contains(rest, "@")
}
