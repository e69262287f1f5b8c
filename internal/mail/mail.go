// Package mail sends the account mails (verification codes, password reset
// links) over SMTP and holds their texts. It speaks plain SMTP upgraded with
// STARTTLS when the server offers it, or implicit TLS on port 465, and never
// sends credentials over an unencrypted connection to a remote server.
package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"
)

// Config is the SMTP settings (options SMTPServer, SMTPPort, SMTPAccount,
// SMTPFrom, SMTPToken).
type Config struct {
	Server  string
	Port    int64
	Account string
	// From is the sender address; empty uses Account.
	From  string
	Token string
}

// Configured reports whether a server is set: without one no mail is sent.
func (c Config) Configured() bool { return strings.TrimSpace(c.Server) != "" }

func (c Config) from() string {
	if c.From != "" {
		return c.From
	}
	return c.Account
}

// Message is one mail to send.
type Message struct {
	To      string
	Subject string
	Body    string // HTML
}

// ErrNotConfigured refuses a send while no SMTP server is set.
var ErrNotConfigured = errors.New("smtp server not configured")

// Sender sends mail. Its zero value sends with the system's roots and a
// 30-second bound on the whole exchange.
type Sender struct {
	// Roots verify the server's certificate; nil uses the system's.
	Roots *x509.CertPool
	// Timeout bounds one send, dialing included; 0 is 30 s.
	Timeout time.Duration
	// ImplicitTLSPort is the port spoken TLS from the first byte; 0 is
	// 465 (SMTPS). Tests point it at a fake's port.
	ImplicitTLSPort int64
}

// Send delivers m through the server in c. The whole exchange is bounded by
// the Sender's timeout and by ctx.
func (s *Sender) Send(ctx context.Context, c Config, m Message) error {
	if !c.Configured() {
		return ErrNotConfigured
	}
	from, err := mail.ParseAddress(c.from())
	if err != nil {
		return fmt.Errorf("smtp from %q: %w", c.from(), err)
	}
	if _, err := mail.ParseAddress(m.To); err != nil {
		return fmt.Errorf("smtp to %q: %w", m.To, err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	port := c.Port
	if port == 0 {
		port = 587
	}
	addr := net.JoinHostPort(c.Server, strconv.FormatInt(port, 10))
	tlsConf := &tls.Config{ServerName: c.Server, RootCAs: s.Roots, MinVersion: tls.VersionTLS12}
	var conn net.Conn
	implicit := s.ImplicitTLSPort
	if implicit == 0 {
		implicit = 465
	}
	if port == implicit {
		conn, err = (&tls.Dialer{Config: tlsConf}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("smtp dial %s: %w", addr, err)
	}
	// The deadline bounds every read and write of the exchange; net/smtp
	// has no context of its own.
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	defer conn.Close()
	if err := exchange(conn, c, tlsConf, from.Address, m); err != nil {
		return fmt.Errorf("smtp send via %s: %w", addr, err)
	}
	return nil
}

func exchange(conn net.Conn, c Config, tlsConf *tls.Config, from string, m Message) error {
	client, err := smtp.NewClient(conn, c.Server)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.Hello("localhost"); err != nil {
		return err
	}
	if _, isTLS := conn.(*tls.Conn); !isTLS {
		if ok, _ := client.Extension("STARTTLS"); ok {
			if err := client.StartTLS(tlsConf); err != nil {
				return err
			}
		}
	}
	if c.Account != "" || c.Token != "" {
		// smtp.PlainAuth itself refuses to send the password over an
		// unencrypted connection to anything but localhost.
		if err := client.Auth(smtp.PlainAuth("", c.Account, c.Token, c.Server)); err != nil {
			return err
		}
	}
	if err := client.Mail(from); err != nil {
		return err
	}
	if err := client.Rcpt(m.To); err != nil {
		return err
	}
	w, err := client.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(compose(from, m)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return client.Quit()
}

// compose is the message text: headers with the subject encoded for
// non-ASCII, then the HTML body.
func compose(from string, m Message) []byte {
	var b strings.Builder
	b.WriteString("From: " + from + "\r\n")
	b.WriteString("To: " + m.To + "\r\n")
	b.WriteString("Subject: " + mime.BEncoding.Encode("UTF-8", m.Subject) + "\r\n")
	b.WriteString("Date: " + time.Now().Format(time.RFC1123Z) + "\r\n")
	b.WriteString("MIME-Version: 1.0\r\n")
	b.WriteString("Content-Type: text/html; charset=UTF-8\r\n")
	b.WriteString("Content-Transfer-Encoding: 8bit\r\n\r\n")
	// Bare LFs become CRLF, as SMTP's DATA wants.
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n"))
	return []byte(b.String())
}
