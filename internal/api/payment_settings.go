package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/store"
)

// Messages of the payment settings.
const (
	MsgPaymentSaved   = "支付通道设置已保存"
	MsgPaymentEnabled = "参数 enabled 必须是 true 或 false"
)

// maxPaymentUploadBytes bounds a multipart save: a few PEM files.
const maxPaymentUploadBytes = 1 << 20

// paymentChannelView is one channel in the settings answer: secrets
// masked, uploaded file paths shown.
type paymentChannelView struct {
	Method  string `json:"method"`
	Enabled bool   `json:"enabled"`
	Config  any    `json:"config"`
}

// getPaymentSettings reads every channel's configuration (Root).
func (s *Server) getPaymentSettings(w http.ResponseWriter, r *http.Request) error {
	views := make([]paymentChannelView, 0, len(payment.Channels))
	for _, m := range payment.Channels {
		c, err := s.Commerce.ChannelSetting(r.Context(), m)
		if err != nil {
			return err
		}
		views = append(views, paymentChannelView{Method: m, Enabled: c.Enabled, Config: payment.MaskedConfig(m, c.Config)})
	}
	return httpx.OK(w, views)
}

// paymentStatus lists the enabled channels (no auth): names only.
func (s *Server) paymentStatus(w http.ResponseWriter, r *http.Request) error {
	enabled := []string{}
	for _, m := range payment.Channels {
		c, err := s.Commerce.ChannelSetting(r.Context(), m)
		if err != nil {
			return err
		}
		if c.Enabled {
			enabled = append(enabled, m)
		}
	}
	// The top-up page needs the presets and whether a custom amount is
	// allowed before a user orders; they are prices, not secrets, so they
	// are public like the channel names (the Root settings route keeps the
	// rest).
	tp := s.Options.Current().Topup
	presets := tp.Presets
	if presets == nil {
		presets = []order.Preset{}
	}
	return httpx.OK(w, map[string]any{"channels": enabled, "topup_enabled": tp.Enabled,
		"allow_custom": tp.AllowCustom, "exchange_rate": tp.ExchangeRate, "presets": presets})
}

type paymentSettingRequest struct {
	Enabled bool            `json:"enabled"`
	Config  json.RawMessage `json:"config"`
}

// updatePaymentSetting saves one channel (Root): JSON {enabled, config}, or
// multipart with fields enabled and config (JSON text) and PEM files named
// after their config field (cert_file, key_file, private_key_file,
// public_key_file). Files are checked first and written under
// DATA_DIR/payment with generated names, mode 0600; the answer does not
// carry their paths.
func (s *Server) updatePaymentSetting(w http.ResponseWriter, r *http.Request) error {
	method := r.PathValue("method")
	if !payment.IsChannel(method) {
		return httpx.Fail(order.MsgPayMethodUnknown)
	}
	old, err := s.Commerce.ChannelSetting(r.Context(), method)
	if err != nil {
		return err
	}
	var req paymentSettingRequest
	files := map[string][]byte{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		if req, err = readPaymentForm(w, r, method, files); err != nil {
			return err
		}
	} else if err := httpx.Decode(w, r, &req); err != nil {
		return err
	}
	config, msg, args := payment.NormalizeConfig(method, req.Config, old.Config)
	if msg != "" {
		return failMsg(msg, args)
	}
	for field, data := range files {
		if msg, args := payment.CheckPEM(field, data, payment.FileFields[method][field]); msg != "" {
			return failMsg(msg, args)
		}
	}
	for field, data := range files {
		path, err := s.writePEM(method, field, data)
		if err != nil {
			return err
		}
		config = payment.SetFile(method, config, field, path)
	}
	value, _ := json.Marshal(payment.ChannelSetting{Enabled: req.Enabled, Config: config})
	if err := s.Store.SetOptions(r.Context(), map[string]string{payment.OptionKey(method): string(value)}); err != nil {
		return err
	}
	me := caller(r)
	s.Logs.Write(store.Log{UserID: me.ID, Username: me.Username, Type: store.LogAdmin,
		Content: fmt.Sprintf(logtext.AdminPayment, me.Username, method)})
	return httpx.OKText(w, r, MsgPaymentSaved)
}

func failMsg(msg string, args []any) error {
	if len(args) > 0 {
		return httpx.Failf(msg, args...)
	}
	return httpx.Fail(msg)
}

// readPaymentForm reads a multipart save: enabled, config and the
// channel's PEM files (each at most payment.MaxPEMFileBytes).
func readPaymentForm(w http.ResponseWriter, r *http.Request, method string, files map[string][]byte) (paymentSettingRequest, error) {
	var req paymentSettingRequest
	r.Body = http.MaxBytesReader(w, r.Body, maxPaymentUploadBytes)
	if err := r.ParseMultipartForm(maxPaymentUploadBytes); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, httpx.FailStatus(http.StatusRequestEntityTooLarge, httpx.MsgBodyTooLarge)
		}
		return req, httpx.Fail(httpx.MsgInvalidParams)
	}
	defer r.MultipartForm.RemoveAll()
	if v := r.FormValue("enabled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return req, httpx.Fail(MsgPaymentEnabled)
		}
		req.Enabled = b
	}
	if v := r.FormValue("config"); v != "" {
		if !json.Valid([]byte(v)) {
			return req, httpx.Fail(httpx.MsgInvalidParams)
		}
		req.Config = json.RawMessage(v)
	}
	for field, headers := range r.MultipartForm.File {
		if _, ok := payment.FileFields[method][field]; !ok {
			return req, httpx.Failf(payment.MsgPEMFieldUnknown, field)
		}
		f, err := headers[0].Open()
		if err != nil {
			return req, err
		}
		data, err := io.ReadAll(io.LimitReader(f, payment.MaxPEMFileBytes+1))
		f.Close()
		if err != nil {
			return req, err
		}
		if len(data) > payment.MaxPEMFileBytes {
			return req, httpx.Failf(payment.MsgPEMInvalid, field)
		}
		files[field] = data
	}
	return req, nil
}

// writePEM stores an uploaded file under DATA_DIR/payment with a generated
// name, readable by this process's user only.
func (s *Server) writePEM(method, field string, data []byte) (string, error) {
	dir := filepath.Join(s.DataDir, "payment")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := make([]byte, 12)
	_, _ = rand.Read(name)
	path := filepath.Join(dir, method+"-"+field+"-"+hex.EncodeToString(name)+".pem")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path, nil
	}
	return abs, nil
}
