package bedrock

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Credentials are a channel key's parts: ACCESS_KEY_ID|SECRET_ACCESS_KEY|REGION
// with an optional fourth part, the session token of temporary credentials.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	Region          string
	SessionToken    string
}

// String hides the secret and the session token, so a logged value leaks
// neither.
func (c Credentials) String() string {
	return c.AccessKeyID + "|***|" + c.Region
}

var (
	accessKeyID = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)
	regionName  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
)

// ParseKey splits a channel key. Spaces around the parts are dropped (keys
// are pasted); empty parts, an access key id that is not AWS's upper-case
// letters and digits, a malformed region or a secret with spaces or control
// characters are refused.
func ParseKey(key string) (Credentials, error) {
	parts := strings.Split(strings.TrimSpace(key), "|")
	if len(parts) != 3 && len(parts) != 4 {
		return Credentials{}, errors.New("bedrock key: want ACCESS_KEY_ID|SECRET_ACCESS_KEY|REGION, optionally |SESSION_TOKEN")
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	c := Credentials{AccessKeyID: parts[0], SecretAccessKey: parts[1], Region: parts[2]}
	if len(parts) == 4 {
		c.SessionToken = parts[3]
		if c.SessionToken == "" {
			return Credentials{}, errors.New("bedrock key: the session token (4th part) is empty")
		}
	}
	if !accessKeyID.MatchString(c.AccessKeyID) {
		return Credentials{}, errors.New("bedrock key: the access key id (1st part) must be 16 to 128 upper-case letters and digits")
	}
	if c.SecretAccessKey == "" || !printable(c.SecretAccessKey) || !printable(c.SessionToken) {
		return Credentials{}, errors.New("bedrock key: the secret (2nd part) and session token must be non-empty, without spaces or control characters")
	}
	if !regionName.MatchString(c.Region) {
		return Credentials{}, fmt.Errorf("bedrock key: region %q (3rd part) is not an AWS region like us-east-1", c.Region)
	}
	return c, nil
}

func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == 0xfffd })
}
