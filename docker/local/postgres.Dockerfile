# PostgreSQL 15 from Debian, for docker/smoke.sh where Docker Hub is out of reach. It
# takes the official image's settings (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# PGDATA) so docker/compose.yaml works with either.
ARG BASE_IMAGE=local/debian:bookworm
FROM ${BASE_IMAGE}
# The official image's user and group ids (999), made before the package makes its own,
# so that docker/compose.yaml's tmpfs for the socket directory fits both images.
RUN groupadd --system --gid 999 postgres \
    && useradd --system --uid 999 --gid postgres --home-dir /var/lib/postgresql \
        --shell /bin/bash postgres \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
RUN chmod 0755 /usr/local/bin/postgres-entrypoint.sh \
    && mkdir -p "$PGDATA" /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint.sh"]
