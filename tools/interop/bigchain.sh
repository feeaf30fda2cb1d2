#!/usr/bin/env bash
# Makes a large certificate chain for the amplificationlimit case, as the interop runner does
# for it (a long chain, and a leaf with about twenty 250-character DNS names): the server's
# first flight is then several times the client's Initial, so that the server has to stop at
# its 3x anti-amplification limit (RFC 9000 §8.1) and wait for the client.
#
#   bigchain.sh DIR
#
# Writes DIR/rootca.crt (the trust anchor, for the clients' --ca), DIR/cert.crt (the chain, leaf
# first: leaf + 4 intermediates) and DIR/cert.key (the leaf's key). Keys: ECDSA P-256 for the
# root and the leaf, RSA 2048 for the intermediates (larger certificates). The runner's chain has
# 9 certificates; rustls (our library, quinn) builds paths of at most 6 intermediates, so this
# chain is shorter and the leaf carries the bulk. The leaf is valid for localhost, 127.0.0.1
# and ::1, for a day. Needs openssl (1.1.1 or 3).
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"

INTERMEDIATES=4
NAMES=20

ca_ext() {
    printf '[req]\ndistinguished_name=dn\n[dn]\n[ext]\n'
    printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n'
    printf 'subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n'
}

# A random DNS name of 247 characters: four 61-character labels (a label is at most 63).
long_name() {
    local i label
    for i in 1 2 3 4; do
        label="$(LC_ALL=C tr -dc 'a-z0-9' </dev/urandom | head -c 61)"
        printf '%s%s' "$label" "$([ "$i" = 4 ] || echo .)"
    done
}

leaf_ext() {
    local san="DNS:localhost,IP:127.0.0.1,IP:::1" i
    for i in $(seq 1 "$NAMES"); do san="$san,DNS:$(long_name)"; done
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n'
    printf 'extendedKeyUsage=serverAuth,clientAuth\nsubjectKeyIdentifier=hash\n'
    printf 'authorityKeyIdentifier=keyid\nsubjectAltName=%s\n' "$san"
}

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out rootca.key 2>/dev/null
openssl req -new -x509 -key rootca.key -sha256 -days 2 -subj "/O=interop bigchain/CN=bigchain root" \
    -config <(ca_ext) -extensions ext -out rootca.crt 2>/dev/null

issuer=rootca
: >chain.tmp
for i in $(seq 1 "$INTERMEDIATES"); do
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "int$i.key" 2>/dev/null
    openssl req -new -key "int$i.key" -subj "/O=interop bigchain/CN=bigchain intermediate $i" \
        -out "int$i.csr" 2>/dev/null
    openssl x509 -req -in "int$i.csr" -CA "$issuer.crt" -CAkey "$issuer.key" -CAcreateserial \
        -sha256 -days 2 -extfile <(ca_ext | sed -n '/^\[ext\]/,$p' | tail -n +2) -out "int$i.crt" 2>/dev/null
    # The chain file lists the leaf first, then each certificate's issuer.
    cat "int$i.crt" chain.tmp >chain.new && mv chain.new chain.tmp
    issuer="int$i"
done

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out cert.key 2>/dev/null
openssl req -new -key cert.key -subj "/O=interop bigchain/CN=localhost" -out leaf.csr 2>/dev/null
openssl x509 -req -in leaf.csr -CA "$issuer.crt" -CAkey "$issuer.key" -CAcreateserial -sha256 \
    -days 2 -extfile <(leaf_ext) -out leaf.crt 2>/dev/null
cat leaf.crt chain.tmp >cert.crt

openssl verify -CAfile rootca.crt -untrusted chain.tmp leaf.crt >/dev/null
rm -f ./*.csr ./*.srl chain.tmp int*.key int*.crt leaf.crt rootca.key
