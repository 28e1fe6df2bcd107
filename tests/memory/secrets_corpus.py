"""Real-format FAKE secrets (none is a live credential) and the texts that carry them.

Each entry: (the secret value that must never reach the database, a sentence carrying it
the way an agent or a config file would).
"""

from __future__ import annotations

PRIVATE_KEY_BODY = (
    "MIIEowIBAAKCAQEAx3nQ8Zr1vTq5mWk2Jb9YhP4sLcR7tGfD0aNeUoXiKyVz6BwMj1QpHlS8"
    "dFgT3rYc5Ks9Wm2Nq7Xb4Lv6Pz0Hj8Ut1Ry3Ge5Da7Cf9Bh2Jk4Mn6Qp8Rs0Tu2Vw4Xy6Za8"
)

GITHUB_PAT = (
    "github_pat_11AB3CD5E0aZ9yX8wV7uT6_sR5qP4oN3mL2kJ1iH0gF9eD8cB7aZ6yX5wV4uT3sR2qP1oN0mL9kJ8"
)

CORPUS: list[tuple[str, str]] = [
    ("AKIA4QJZ7XKTR2M9PLWB", "The deploy user key is AKIA4QJZ7XKTR2M9PLWB for us-east-1."),
    (
        "q8Vd2Lk9Rz7Tn4Wy1Xp6Mb3Jc5Hf0Gs8Ea2Uo7Ni",
        "aws_secret_access_key = q8Vd2Lk9Rz7Tn4Wy1Xp6Mb3Jc5Hf0Gs8Ea2Uo7Ni",
    ),
    (
        "ghp_R8kLm2Nq7Xb4Lv6Pz0Hj8Ut1Ry3Ge5Da7Cf9B",
        "CI pushes with token ghp_R8kLm2Nq7Xb4Lv6Pz0Hj8Ut1Ry3Ge5Da7Cf9B",
    ),
    (GITHUB_PAT, f"Use {GITHUB_PAT} for the bot."),
    (
        "xoxb-2048123456-4096123456789-Zq8Wx7Ec6Rv5Tb4Yn3Um2Ik1",
        "Slack bot token: xoxb-2048123456-4096123456789-Zq8Wx7Ec6Rv5Tb4Yn3Um2Ik1",
    ),
    (
        "sk_live_51HcQ2mKx9Vb7Nz3Lp5Rt8Wy2Jd4Fg6Hk0",
        "Stripe prod key sk_live_51HcQ2mKx9Vb7Nz3Lp5Rt8Wy2Jd4Fg6Hk0 lives in vault.",
    ),
    (
        "sk-proj-Tq7Wz9Xb2Lm4Np6Rv8Ys0Uc3Ef5Gh7Jk9Ma1Qd3",
        "OPENAI_API_KEY=sk-proj-Tq7Wz9Xb2Lm4Np6Rv8Ys0Uc3Ef5Gh7Jk9Ma1Qd3",
    ),
    (
        "sk-ant-api03-Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1Uf0Id9Os8Pa7",
        "the Anthropic key sk-ant-api03-Zx9Cv8Bn7Mq6Wl5Ek4Rj3Th2Yg1Uf0Id9Os8Pa7 is rate-limited",
    ),
    (
        "AIzaSyD4k9Lm2Xq7Wv5Rt8Bn3Hj6Pz1Gc0Fe8Ty",
        "Maps uses AIzaSyD4k9Lm2Xq7Wv5Rt8Bn3Hj6Pz1Gc0Fe8Ty in the frontend.",
    ),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSIsIm5hbWUiOiJhZG1pbiJ9.Zk3Lq9Xw2Vb7Nm4Rt8Yp1",
        "Test with Authorization header eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSIsIm5hbWUiOiJhZG1p"
        "biJ9.Zk3Lq9Xw2Vb7Nm4Rt8Yp1 against staging.",
    ),
    (
        PRIVATE_KEY_BODY,
        "-----BEGIN RSA PRIVATE KEY-----\n" + PRIVATE_KEY_BODY + "\n-----END RSA PRIVATE KEY-----",
    ),
    (
        "hunter2Hunter2!x",
        "The staging DB is postgres://admin:hunter2Hunter2!x@db.internal:5432/app",
    ),
    ("correct-horse-battery-staple", "DATABASE_PASSWORD=correct-horse-battery-staple"),
    (
        "django-insecure-7kq!w2z@x9l#m4v",
        "SECRET_KEY='django-insecure-7kq!w2z@x9l#m4v'",
    ),
    ("Tr0ub4dor&3", "Remember: the admin password is Tr0ub4dor&3 on the old box."),
    (
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
        "curl -H 'Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5' https://api.local",
    ),
    (
        "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Y",
        "//registry.npmjs.org/:_authToken=npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Y",
    ),
    (
        "hf_Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc2Vb",
        "Download weights with hf_Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc2Vb",
    ),
    (
        "SG.Nq7Wk2Lp9Xz4Vb.Tr8Ym3Jc6Hf1Gd5Se0Ua2Io",
        "mail via SG.Nq7Wk2Lp9Xz4Vb.Tr8Ym3Jc6Hf1Gd5Se0Ua2Io",
    ),
    (
        "p9Xk2Wq7Lm4Zr8Tv1Nb6Yc3Hd5Jf0Gs",
        "session cookie was p9Xk2Wq7Lm4Zr8Tv1Nb6Yc3Hd5Jf0Gs when it broke",
    ),
    (
        "glpat-Xy7Zq2Wk9Lm4Rt8Vb1Nc",
        "gitlab token glpat-Xy7Zq2Wk9Lm4Rt8Vb1Nc",
    ),
]

# Things that look technical but are not secrets: they must survive redaction intact.
NOT_SECRETS = [
    "Commit 3f2a9c4e8b1d7f6a5e0c9b8a7d6e5f4a3b2c1d0e fixed the race.",
    "The id 01HZX3K9M2Q7W5R8T1V4Y6B0NC is a ULID.",
    "Request 550e8400-e29b-41d4-a716-446655440000 timed out.",
    "parseHttpResponseHeaders lives in src/http/response_headers.py",
    "Run pytest tests/memory/test_redact.py::test_corpus -x -q",
    "The password policy requires 12 characters.",
    "Set MAX_RETRY_COUNT=5 in settings.",
]
