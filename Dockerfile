# One image for web and worker (docker-compose.yml picks the command).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY clusterdesigner ./clusterdesigner
COPY apps ./apps
RUN pip install --no-cache-dir .
COPY . .
RUN DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "-c", "python:clusterdesigner.gunicorn_conf", "clusterdesigner.wsgi:application", "--bind", "0.0.0.0:8000"]
