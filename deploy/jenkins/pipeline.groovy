// The pipeline of every service's Jenkins job. services/<svc>/Jenkinsfile checks the
// repository out on an agent and calls run('<svc>'); each step is a make target, so a
// laptop runs the same commands. Agent needs: python3.11, make, docker. Jenkins provides
// PAIJU_REGISTRY (registry and path, e.g. registry.example.com/paiju) and the
// username/password credential "paiju-registry". The image is
// $PAIJU_REGISTRY/paiju-<svc>:<12-character commit> (the Makefile's IMAGE_TAG).

def run(String service) {
    properties([buildDiscarder(logRotator(numToKeepStr: '30')), disableConcurrentBuilds()])
    withEnv(["SERVICE=${service}", "PYTEST_ADDOPTS=--junitxml=reports/junit-${service}.xml"]) {
        timeout(time: 45, unit: 'MINUTES') {
            timestamps {
                pipelineStages(service)
            }
        }
    }
}

def pipelineStages(String service) {
    stage('Build') {
        sh 'make "build-$SERVICE"'
    }
    stage('Test') {
        try {
            sh 'make "test-$SERVICE"'
        } finally {
            junit allowEmptyResults: true, testResults: "reports/junit-${service}.xml"
        }
    }
    stage('Image') {
        if (!env.PAIJU_REGISTRY) {
            error("PAIJU_REGISTRY is not set: the registry to push paiju-${service} to")
        }
        sh 'make "image-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"'
        withCredentials([usernamePassword(credentialsId: 'paiju-registry',
                                          usernameVariable: 'REGISTRY_USER',
                                          passwordVariable: 'REGISTRY_PASSWORD')]) {
            sh '''
                set -eu
                trap 'docker logout "${PAIJU_REGISTRY%%/*}" || true' EXIT
                echo "$REGISTRY_PASSWORD" | docker login --username "$REGISTRY_USER" --password-stdin "${PAIJU_REGISTRY%%/*}"
                make "push-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"
            '''
        }
    }
    stage('Archive') {
        archiveArtifacts artifacts: "dist/${service}/**", fingerprint: true
    }
}

return this
