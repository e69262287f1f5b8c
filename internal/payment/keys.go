package payment

import (
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxKeyBytes bounds a key file or key text: a 4096-bit RSA key in PEM is
// about 3.3 KB, so 64 KiB is generous and stops a wrong path (a log, a
// device) from being read whole.
const MaxKeyBytes = 64 << 10

// MinRSABits is the smallest RSA key accepted: RSA2 (RSA-SHA256) at the
// wallet providers requires 2048-bit keys.
const MinRSABits = 2048

// Key errors. ErrKeyEncrypted lets the settings code refuse a
// passphrase-protected key at upload (spec: a private key must not have a
// passphrase) instead of at the first payment.
var (
	ErrKeyEncrypted = errors.New("private key is protected by a passphrase; export it without one")
	ErrKeyEmpty     = errors.New("key is empty")
	ErrKeyInvalid   = errors.New("key is not an RSA key in PEM or base64 DER")
)

// ParsePrivateKey reads an RSA private key: PEM ("RSA PRIVATE KEY", PKCS#1;
// "PRIVATE KEY", PKCS#8) or a bare base64 DER body without PEM headers, as
// the Alipay console hands it out. A passphrase-protected key answers
// ErrKeyEncrypted; keys below MinRSABits are refused.
func ParsePrivateKey(text []byte) (*rsa.PrivateKey, error) {
	der, pemType, err := keyDER(text)
	if err != nil {
		return nil, err
	}
	if pemType == "ENCRYPTED PRIVATE KEY" || encryptedPKCS8(der) {
		return nil, ErrKeyEncrypted
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key is %T, want RSA", k)
		}
		key = rk
	} else {
		return nil, ErrKeyInvalid
	}
	if key.N.BitLen() < MinRSABits {
		return nil, fmt.Errorf("private key has %d bits, want at least %d", key.N.BitLen(), MinRSABits)
	}
	return key, nil
}

// ParsePublicKey reads an RSA public key: PEM ("PUBLIC KEY", PKIX; "RSA
// PUBLIC KEY", PKCS#1) or a bare base64 DER body (the Alipay console's
// "支付宝公钥" is a bare PKIX body).
func ParsePublicKey(text []byte) (*rsa.PublicKey, error) {
	der, _, err := keyDER(text)
	if err != nil {
		return nil, err
	}
	var key *rsa.PublicKey
	if k, err := x509.ParsePKIXPublicKey(der); err == nil {
		rk, ok := k.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key is %T, want RSA", k)
		}
		key = rk
	} else if k, err := x509.ParsePKCS1PublicKey(der); err == nil {
		key = k
	} else {
		return nil, ErrKeyInvalid
	}
	if key.N.BitLen() < MinRSABits {
		return nil, fmt.Errorf("public key has %d bits, want at least %d", key.N.BitLen(), MinRSABits)
	}
	return key, nil
}

// LoadPrivateKey parses the key text, or when it is blank the file at
// path (a PEM file uploaded through the settings).
func LoadPrivateKey(text, path string) (*rsa.PrivateKey, error) {
	b, err := keyBytes(text, path)
	if err != nil {
		return nil, err
	}
	return ParsePrivateKey(b)
}

// LoadPublicKey is LoadPrivateKey for a public key.
func LoadPublicKey(text, path string) (*rsa.PublicKey, error) {
	b, err := keyBytes(text, path)
	if err != nil {
		return nil, err
	}
	return ParsePublicKey(b)
}

func keyBytes(text, path string) ([]byte, error) {
	if strings.TrimSpace(text) != "" {
		return []byte(text), nil
	}
	if path == "" {
		return nil, ErrKeyEmpty
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if len(b) > MaxKeyBytes {
		return nil, fmt.Errorf("key file is larger than %d bytes", MaxKeyBytes)
	}
	return b, nil
}

// keyDER answers the DER inside PEM text (and its block type), or the
// decoded bare base64 body. A legacy OpenSSL-encrypted PEM (Proc-Type:
// 4,ENCRYPTED) is ErrKeyEncrypted.
func keyDER(text []byte) ([]byte, string, error) {
	if len(text) > MaxKeyBytes {
		return nil, "", fmt.Errorf("key is larger than %d bytes", MaxKeyBytes)
	}
	s := strings.TrimSpace(string(text))
	if s == "" {
		return nil, "", ErrKeyEmpty
	}
	if strings.Contains(s, "-----BEGIN") {
		block, _ := pem.Decode([]byte(s))
		if block == nil {
			return nil, "", ErrKeyInvalid
		}
		if strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, "", ErrKeyEncrypted
		}
		return block.Bytes, block.Type, nil
	}
	// A bare body may be wrapped over lines, as copied from a console.
	body := strings.Join(strings.Fields(s), "")
	der, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, "", ErrKeyInvalid
	}
	return der, "", nil
}

// encryptedPKCS8 reports whether der is a PKCS#8 EncryptedPrivateKeyInfo
// (RFC 5958: SEQUENCE of an algorithm and an OCTET STRING), which is what a
// bare base64 body of a passphrase-protected key holds. Plain PKCS#1 and
// PKCS#8 keys start with an INTEGER version, so they never match.
func encryptedPKCS8(der []byte) bool {
	var info struct {
		Algo pkix.AlgorithmIdentifier
		Data []byte
	}
	rest, err := asn1.Unmarshal(der, &info)
	if err != nil || len(rest) != 0 {
		return false
	}
	return len(info.Algo.Algorithm) > 0
}
