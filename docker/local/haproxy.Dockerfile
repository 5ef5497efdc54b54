# HAProxy 2.6 from Debian, for docker/smoke.sh; same config path and user as the
# official haproxy image.
ARG BASE_IMAGE=local/debian:bookworm
FROM ${BASE_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && mkdir -p /usr/local/etc/haproxy
USER haproxy
STOPSIGNAL SIGUSR1
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
