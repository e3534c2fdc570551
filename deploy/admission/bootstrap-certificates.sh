#!/usr/bin/env bash
# A self-signed CA and a serving certificate for the admission webhook, for clusters without
# cert-manager (docs/admission.md "Certificates"). Writes into DIR:
#   ca.crt               the CA: give it to the webhook configuration (caBundle, base64) or to
#                        `kmultiarch admission configuration --ca-file DIR/ca.crt`
#   tls.crt, tls.key     the server's pair, for SERVICE.NAMESPACE.svc
#   secret.yaml          the kubernetes.io/tls Secret NAME (default kmultiarch-admission-tls)
#                        holding them: kubectl apply -f DIR/secret.yaml
# The CA's key is not kept: renew by running the script again (the certificate lasts DAYS days,
# default 365) and applying both the Secret and the new caBundle; the server reads the new pair
# from disk without a restart.
#
# Usage: bootstrap-certificates.sh NAMESPACE SERVICE DIR [SECRET_NAME] [DAYS]
set -euo pipefail

if [ "$#" -lt 3 ]; then
  echo "usage: $0 NAMESPACE SERVICE DIR [SECRET_NAME] [DAYS]" >&2
  exit 2
fi
namespace=$1 service=$2 dir=$3 secret=${4:-kmultiarch-admission-tls} days=${5:-365}
host="$service.$namespace.svc"

mkdir -p "$dir"
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=kmultiarch-admission-ca" \
  -keyout "$work/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" \
  -keyout "$dir/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
  "$host" "$host" > "$work/ext.cnf"
openssl x509 -req -in "$work/tls.csr" -CA "$dir/ca.crt" -CAkey "$work/ca.key" \
  -CAserial "$work/ca.srl" -CAcreateserial -days "$days" -extfile "$work/ext.cnf" -out "$dir/tls.crt" 2>/dev/null

base64_of() { base64 < "$1" | tr -d '\n'; }
cat > "$dir/secret.yaml" <<SECRET
apiVersion: v1
kind: Secret
metadata:
  name: $secret
  namespace: $namespace
type: kubernetes.io/tls
data:
  tls.crt: $(base64_of "$dir/tls.crt")
  tls.key: $(base64_of "$dir/tls.key")
SECRET
echo "wrote $dir/ca.crt, $dir/tls.crt, $dir/tls.key and $dir/secret.yaml for $host" >&2
echo "caBundle: $(base64_of "$dir/ca.crt")"
