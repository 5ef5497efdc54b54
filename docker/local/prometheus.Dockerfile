# Prometheus from Debian, for docker/smoke.sh's monitoring profile; same paths as the
# prom/prometheus image.
ARG BASE_IMAGE=local/debian:bookworm
FROM ${BASE_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
USER prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
