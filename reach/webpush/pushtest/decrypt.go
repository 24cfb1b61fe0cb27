package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// decrypt opens an aes128gcm push message (RFC 8188) with the device's
// keys (RFC 8291).
func decrypt(body []byte, d *device) ([]byte, error) {
	// RFC 8188 §2.1: salt (16) | rs (4) | idlen (1) | keyid (idlen).
	if len(body) < 21 {
		return nil, errors.New("the body is shorter than an aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	// RFC 8291 §4: "the keyid parameter MUST contain the uncompressed
	// point of the application server's ECDH public key" (65 bytes).
	if idlen != 65 || len(body) < 21+idlen {
		return nil, fmt.Errorf("the keyid is %d bytes, not an uncompressed P-256 point", idlen)
	}
	asPublic, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("the keyid is not a P-256 public key: %w", err)
	}
	record := body[21+idlen:]
	// RFC 8188 §2: rs "MUST NOT be less than 18"; RFC 8291 §4: a push
	// message is a single record, so it is no longer than rs.
	if rs < 18 || uint32(len(record)) > rs || len(record) < 17 {
		return nil, fmt.Errorf("the body is not one record of at most rs=%d bytes (it is %d)", rs, len(record))
	}
	gcm, nonce, err := recordCipher(d, asPublic, salt)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil) // SEQ 0: the nonce as derived
	if err != nil {
		return nil, fmt.Errorf("the body does not decrypt with the subscription's keys: %w", err)
	}
	// RFC 8188 §2: plaintext = data | delimiter | zero padding; the last
	// record's delimiter is 0x02.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("the decrypted record has no 0x02 padding delimiter")
	}
	return plain[:i], nil
}

// recordCipher derives the content encryption key and nonce.
func recordCipher(d *device, asPublic *ecdh.PublicKey, salt []byte) (cipher.AEAD, []byte, error) {
	ecdhSecret, err := d.key.ECDH(asPublic)
	if err != nil {
		return nil, nil, fmt.Errorf("ecdh: %w", err)
	}
	// RFC 8291 §3.4: key_info = "WebPush: info" || 0x00 || ua_public ||
	// as_public; IKM = HKDF(salt=auth_secret, ikm=ecdh_secret, key_info, 32).
	info := "WebPush: info\x00" + string(d.key.PublicKey().Bytes()) + string(asPublic.Bytes())
	ikm, err := hkdf.Key(sha256.New, ecdhSecret, d.auth, info, 32)
	if err != nil {
		return nil, nil, err
	}
	// RFC 8188 §2.2, §2.3: CEK and NONCE from HKDF(salt, IKM).
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, nil, err
	}
	gcm, err := cipher.NewGCM(block)
	return gcm, nonce, err
}
